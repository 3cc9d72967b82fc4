#!/usr/bin/env python3
"""Writes bench/spec/prompts.jsonl, the prompt set of the speculative-decoding benchmark.

    python3 bench/spec/make_prompts.py            # rewrites bench/spec/prompts.jsonl
    python3 bench/spec/make_prompts.py --check    # fails if the committed file is stale

One JSON object per line:
    {"id": "...", "kind": "grounded" | "open", "messages": [{"role": "user", "content": "..."}],
     "max_tokens": 200}

"grounded" tasks (24) are chat requests whose answer mostly copies the input (rename a
variable and print the code, fix spelling and repeat, reformat a list or table, quote verbatim,
...), which is where n-gram / prompt-lookup speculation helps. "open" prompts (10) have nothing
to copy from and show the cost of speculation when drafts are mostly rejected. The model under
test is tiny (SmolLM2-135M-Instruct), so each task is phrased plainly, instruction first.
Every grounded input is 80-300 word-ish units (approx_tokens; the script prints each count);
with SmolLM2's tokenizer the inputs are 132-317 tokens (the two markdown tables 305 and 317).
Plain Python, no dependencies; the output is deterministic.
"""
import argparse
import json
import os
import re
import sys

MAX_TOKENS = 200
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "prompts.jsonl")

# ---------------------------------------------------------------------------------------------
# Input-grounded tasks: (id, instruction, input). The answer should mostly copy the input.
# The code tasks are here; the prose and data tasks are in prompt_texts.py (file size limit).
# ---------------------------------------------------------------------------------------------
CODE_TASKS = [
    ("rename_py_cnt",
     "Repeat the following Python code exactly, but rename the variable `cnt` to `count`. "
     "Print the whole code.", '''
def count_words(path):
    cnt = {}
    with open(path) as f:
        for line in f:
            for word in line.split():
                word = word.strip(".,;:!?").lower()
                if not word:
                    continue
                if word in cnt:
                    cnt[word] += 1
                else:
                    cnt[word] = 1
    return cnt


def top_words(path, n=10):
    cnt = count_words(path)
    pairs = sorted(cnt.items(), key=lambda p: p[1], reverse=True)
    return pairs[:n]


if __name__ == "__main__":
    import sys
    for word, total in top_words(sys.argv[1]):
        print(word, total)
'''),
    ("rename_c_tmp",
     "Repeat the following C code exactly, but rename the variable `tmp` to `buffer`. "
     "Print the whole code.", '''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *read_file(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *tmp = malloc(size + 1);
    if (tmp == NULL) {
        fclose(f);
        return NULL;
    }
    size_t got = fread(tmp, 1, size, f);
    fclose(f);
    tmp[got] = '\\0';
    *size_out = got;
    return tmp;
}

int main(int argc, char **argv) {
    size_t size = 0;
    char *tmp = read_file(argv[1], &size);
    printf("%zu bytes\\n", size);
    free(tmp);
    return 0;
}
'''),
    ("rename_js_fn",
     "Repeat the following JavaScript code exactly, but rename the function `calc` to "
     "`calculateTotal` everywhere. Print the whole code.", '''
const TAX_RATE = 0.08;

function calc(items, discount) {
  let sum = 0;
  for (const item of items) {
    sum += item.price * item.quantity;
  }
  if (discount > 0) {
    sum = sum - sum * discount;
  }
  return Math.round(sum * (1 + TAX_RATE) * 100) / 100;
}

const cart = [
  { name: "apple", price: 0.5, quantity: 6 },
  { name: "bread", price: 2.25, quantity: 1 },
  { name: "milk", price: 1.1, quantity: 2 },
];

console.log("Total:", calc(cart, 0));
console.log("With coupon:", calc(cart, 0.1));

module.exports = { calc };
'''),
    ("rename_go_err",
     "Repeat the following Go code exactly, but rename the variable `e` to `err`. "
     "Print the whole code.", '''
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
)

func main() {
	file, e := os.Open("numbers.txt")
	if e != nil {
		fmt.Println("cannot open file:", e)
		return
	}
	defer file.Close()
	total := 0
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		n, e := strconv.Atoi(scanner.Text())
		if e != nil {
			fmt.Println("skipping bad line:", e)
			continue
		}
		total += n
	}
	if e := scanner.Err(); e != nil {
		fmt.Println("read error:", e)
	}
	fmt.Println("sum:", total)
}
'''),
    ("comment_py_stack",
     "Add a short comment above each method of the following Python class. "
     "Print the whole code with the comments.", '''
class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        if not self.items:
            raise IndexError("pop from empty stack")
        return self.items.pop()

    def peek(self):
        if not self.items:
            return None
        return self.items[-1]

    def is_empty(self):
        return len(self.items) == 0

    def size(self):
        return len(self.items)

    def clear(self):
        self.items = []
'''),
    ("comment_sql",
     "Add a comment line starting with -- above each statement of the following SQL. "
     "Print the whole SQL with the comments.", '''
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT UNIQUE,
    created_at DATE
);

CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER REFERENCES customers(id),
    amount REAL NOT NULL,
    placed_at DATE
);

INSERT INTO customers (id, name, email, created_at)
VALUES (1, 'Ana Lopez', 'ana@example.com', '2023-01-15');

INSERT INTO orders (id, customer_id, amount, placed_at)
VALUES (10, 1, 59.90, '2023-02-01');

SELECT c.name, SUM(o.amount) AS total
FROM customers c JOIN orders o ON o.customer_id = c.id
GROUP BY c.name
ORDER BY total DESC;
'''),
    ("py2_to_py3",
     "Repeat the following Python code exactly, but change every `print x` statement into "
     "a `print(x)` function call. Print the whole code.", '''
import random

def guess_game(limit):
    secret = random.randint(1, limit)
    tries = 0
    print "Guess a number between 1 and", limit
    while True:
        guess = int(raw_input("Your guess: "))
        tries += 1
        if guess < secret:
            print "Too low"
        elif guess > secret:
            print "Too high"
        else:
            print "Correct! You needed", tries, "tries"
            break
    return tries

scores = []
for round_number in range(3):
    print "Round", round_number + 1
    scores.append(guess_game(20))
print "Best score:", min(scores)
print "All scores:", scores
'''),
]

sys.path.insert(0, HERE)
from prompt_texts import TEXT_TASKS  # noqa: E402

GROUNDED = CODE_TASKS + TEXT_TASKS

# ---------------------------------------------------------------------------------------------
# Open-ended prompts: (id, text). Nothing in the prompt to copy from.
# ---------------------------------------------------------------------------------------------
OPEN = [
    ("story_lighthouse", "Write a short story about a lighthouse keeper who finds a message in "
     "a bottle."),
    ("sky_blue", "Explain why the sky is blue in simple words."),
    ("ideas_birthday", "List ten ideas for a child's birthday party at home."),
    ("poem_autumn", "Write a short poem about autumn leaves."),
    ("explain_rain", "Explain how rain forms, step by step."),
    ("advice_sleep", "Give me some tips to sleep better at night."),
    ("story_robot", "Write a short story about a small robot that wants to learn to paint."),
    ("ideas_weekend", "Suggest some fun things to do on a rainy weekend."),
    ("explain_exercise", "Why is regular exercise good for your health?"),
    ("describe_city", "Describe a busy city market in the morning."),
]


def approx_tokens(text):
    """Word-ish units (runs of letters/digits, each punctuation mark): a rough token count that,
    unlike str.split, also counts minified JSON and tables fairly."""
    return len(re.findall(r"\w+|[^\w\s]", text))


def build():
    rows = []
    for pid, instruction, body in GROUNDED:
        content = f"{instruction}\n\n{body.strip()}\n"
        rows.append({"id": pid, "kind": "grounded",
                     "messages": [{"role": "user", "content": content}],
                     "max_tokens": MAX_TOKENS, "_words": approx_tokens(body)})
    for pid, text in OPEN:
        rows.append({"id": pid, "kind": "open",
                     "messages": [{"role": "user", "content": text}],
                     "max_tokens": MAX_TOKENS, "_words": approx_tokens(text)})
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        sys.exit("duplicate prompt ids")
    return rows


def render(rows):
    lines = []
    for r in rows:
        r = {k: v for k, v in r.items() if not k.startswith("_")}
        lines.append(json.dumps(r, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--check", action="store_true", help="compare with --out instead of writing")
    args = ap.parse_args()
    rows = build()
    text = render(rows)
    bad = []
    for r in rows:
        print(f"{r['kind']:8s} {r['id']:28s} ~{r['_words']:4d} tokens", file=sys.stderr)
        if r["kind"] == "grounded" and not 80 <= r["_words"] <= 300:
            bad.append(r["id"])
    n_g = sum(r["kind"] == "grounded" for r in rows)
    print(f"{n_g} grounded, {len(rows) - n_g} open", file=sys.stderr)
    if bad:
        sys.exit(f"grounded inputs outside 80-300 approx tokens: {bad}")
    if args.check:
        with open(args.out, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit(f"{args.out} is stale; rerun bench/spec/make_prompts.py")
        print("up to date", file=sys.stderr)
        return
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
