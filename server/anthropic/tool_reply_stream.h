// A reply made under the generic tool format (server/common/tool_calls.h) read as it is
// generated, so that an Anthropic stream can give its parts as they come:
//   {"response": "<text>"}                         -> the text, unescaped, piece by piece
//   {"response": <JSON value>} (a reply schema)   -> the value's JSON text, piece by piece
//   {"tool_calls": [{"name": "<n>", "arguments": {...}}, ...]}
//                                                  -> per call: its start (with the name) once the
//                                                     name is complete, its arguments' JSON text
//                                                     piece by piece, its end
// and, in the tagged mode (the Hermes format), a reply of free text with calls in tags:
//   text <tool_call>{"name": "<n>", "arguments": {...}}</tool_call> ...
//                                                  -> the text (trimmed at its ends, as
//                                                     parse_tool_reply trims it), and each
//                                                     block's call as above; a block whose JSON
//                                                     is no call object is given as text, and a
//                                                     block or tag cut short is dropped
// A resumable scanner, one character at a time, so the work is linear in the reply. Arguments
// that come before the name (the grammar writes the name first) are held until the name is
// known. Generic text that is not in this shape (no tools, or cut short before the first key)
// comes out through finish() for the caller to read as plain text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmserve {

struct ToolStreamPiece {
  enum class Kind { kText, kCallStart, kArguments, kCallEnd };
  Kind kind = Kind::kText;
  std::string text;  // kText: reply text; kCallStart: the name; kArguments: JSON text
};

class ToolReplyStream {
 public:
  explicit ToolReplyStream(bool tagged = false)
      : tagged_(tagged), state_(tagged ? State::kTagText : State::kStart) {}

  // Pieces of the same kind in a row (text, one call's arguments) are merged.
  std::vector<ToolStreamPiece> feed(std::string_view text);
  // The reply ended: a call still open is ended; `unparsed` gets the reply when it never took
  // the generic shape (then nothing was given out).
  std::vector<ToolStreamPiece> finish(std::string* unparsed);

  bool saw_call() const { return calls_ > 0; }

 private:
  enum class State {
    kStart,        // before the opening brace
    kTopKey,       // expecting the top-level key
    kTopKeyStr,    // inside it
    kTopColon,     // after it
    kResponse,     // expecting the response value
    kResponseStr,  // inside the response string
    kResponseRaw,  // inside a non-string response value
    kCallsArray,   // expecting '['
    kCallOpen,     // expecting '{' of a call, ',' or ']'
    kCallKey,      // expecting a key of the call, ',' or '}'
    kCallKeyStr,   // inside it
    kCallColon,    // after a call key
    kCallValue,    // expecting the value of a call key
    kNameStr,      // inside the name string
    kArgsRaw,      // inside the arguments value
    kSkipRaw,      // inside a value of an unknown call key
    kTagText,      // tagged: free text, watching for <tool_call>
    kTagClose,     // tagged: after a call object, expecting </tool_call>
    kTagBad,       // tagged: a block that is no call object, up to </tool_call>
    kDone,         // the reply's JSON ended
    kPlain,        // not the generic shape: everything is held for finish()
  };
  void step(char c, std::vector<ToolStreamPiece>& out);
  // A JSON string's character (after the opening quote): false at the closing quote. Decoded
  // bytes go to `into`.
  bool string_char(char c, std::string& into);
  // A raw JSON value's character: part of it, leading whitespace, the value's end after it
  // (kEndWith) or before it (kEnd: the character belongs to what follows).
  enum class Raw { kPart, kSkip, kEndWith, kEnd };
  Raw raw_char(char c);
  void emit(std::vector<ToolStreamPiece>& out, ToolStreamPiece::Kind kind, std::string text);
  void start_raw();
  void end_call(std::vector<ToolStreamPiece>& out);
  void tag_text(char c, std::vector<ToolStreamPiece>& out);
  void text_out(std::vector<ToolStreamPiece>& out, const std::string& text);

  bool tagged_ = false;

  State state_ = State::kStart;
  std::string pending_;  // tagged: text that may be the start of a tag
  std::string ws_held_;  // tagged: whitespace not yet known to be inside the text
  bool text_given_ = false;
  std::string block_;  // tagged: the current block's raw text, from its opening tag
  std::string all_;    // the whole reply so far
  std::string key_;
  std::string name_;
  std::string held_args_;  // arguments before the name
  bool name_done_ = false;
  bool call_open_ = false;  // a kCallStart was given out
  int calls_ = 0;
  // String decoding.
  bool escape_ = false;
  int hex_left_ = 0;
  uint32_t hex_ = 0;
  uint32_t high_surrogate_ = 0;
  // Raw value tracking.
  int depth_ = 0;
  bool raw_in_string_ = false;
  bool raw_escape_ = false;
  bool raw_started_ = false;
};

}  // namespace llmserve
