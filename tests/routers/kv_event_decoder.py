"""vLLM's KV-event messages decoded with vLLM's own struct definitions (msgspec; the batch
array_like, the events tagged structs: vllm/distributed/kv_events.py), and a prefix index rebuilt
from them the way a router keeps one."""
from typing import Any

import msgspec


class EventBatch(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class KVCacheEvent(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    """Base class of the tagged events."""


class BlockStored(KVCacheEvent):
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None = None


class BlockRemoved(KVCacheEvent):
    block_hashes: list[int]
    medium: str | None


class AllBlocksCleared(KVCacheEvent):
    pass


class KVEventBatch(EventBatch):
    events: list[BlockStored | BlockRemoved | AllBlocksCleared]


DECODER = msgspec.msgpack.Decoder(type=KVEventBatch)


# vLLM's earlier layout (kv_events.layout: array): the events are array_like too.
class LegacyEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    """Base class of the array-layout events."""


class LegacyBlockStored(LegacyEvent, tag="BlockStored"):
    block_hashes: list[int]
    parent_block_hash: int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None = None


class LegacyBlockRemoved(LegacyEvent, tag="BlockRemoved"):
    block_hashes: list[int]
    medium: str | None


class LegacyAllBlocksCleared(LegacyEvent, tag="AllBlocksCleared"):
    pass


class LegacyKVEventBatch(EventBatch):
    events: list[LegacyBlockStored | LegacyBlockRemoved | LegacyAllBlocksCleared]


LEGACY_DECODER = msgspec.msgpack.Decoder(type=LegacyKVEventBatch)


class PrefixIndex:
    """hash -> (parent hash, the block's tokens), from events alone."""

    def __init__(self):
        self.blocks = {}
        self.stored = self.removed = self.cleared = 0

    def apply(self, batch: KVEventBatch):
        for e in batch.events:
            if isinstance(e, (BlockStored, LegacyBlockStored)):
                self.stored += 1
                parent = e.parent_block_hash
                assert parent is None or parent in self.blocks, f"unknown parent {parent}"
                n = e.block_size
                assert len(e.token_ids) == n * len(e.block_hashes)
                for i, h in enumerate(e.block_hashes):
                    assert h not in self.blocks, f"block {h} stored twice"
                    self.blocks[h] = (parent, tuple(e.token_ids[i * n:(i + 1) * n]))
                    parent = h
            elif isinstance(e, (BlockRemoved, LegacyBlockRemoved)):
                self.removed += 1
                for h in e.block_hashes:
                    assert self.blocks.pop(h, None) is not None, f"removed unknown block {h}"
            else:
                self.cleared += 1
                self.blocks.clear()

    def chain_tokens(self, h):
        """The tokens of a block and all its ancestors, first block first."""
        out = []
        while h is not None:
            parent, tokens = self.blocks[h]
            out[:0] = tokens
            h = parent
        return out
