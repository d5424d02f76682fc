/**
 * The `data` of a server-sent event stream (an OpenAI-compatible upstream's streamed completion), parsed
 * as the relay's hot path needs it: the state is four fields of one object, not a parser made of closures.
 * eventsource-parser (the library this replaces on the relay's path; the test suite checks this parser
 * against it) keeps seven closures and their context per parser, about 0.7 KB of heap for every live
 * model stream.
 *
 * Rules: the HTML Standard, "Server-sent events", section 9.2.6 "Interpreting an event stream"
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation). Lines end
 * with CRLF, LF or CR; a line `data` or `data:<value>` (one leading space of the value dropped) adds a
 * line to the event's data; an empty line dispatches the event when it has data (its lines joined with
 * LF); comments (`:...`) and the other fields (`event`, `id`, `retry`, unknown ones) are skipped: the
 * relay reads only `data`. The byte order mark is the decoder's to drop (src/models/openai/utf8-chunks.ts).
 */

/** What receives each event's data, in order. */
export interface SseDataSink {
  onEvent(data: string): void;
}

/** Thrown by {@link SseDataParser.feed} when an event or a line outgrows the parser's bound. */
export class SseEventTooLarge extends Error {
  constructor(readonly maxChars: number) {
    super(`an SSE event or line is longer than ${maxChars} characters`);
    this.name = 'SseEventTooLarge';
  }
}

const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;
const COLON = 0x3a;

/**
 * Incremental parser of one stream's event data. `feed` takes the decoded text as it comes, in pieces
 * cut anywhere (inside a line, between CR and LF), and calls `sink.onEvent(data)` once per complete
 * event, synchronously and in order. A stream that ends without a final empty line dispatches nothing
 * more (as the standard says of an unterminated last event).
 */
export class SseDataParser {
  /** The start of a line whose end has not arrived. */
  #partial = '';
  /** The data lines of the event being read, joined with LF. */
  #data = '';
  #dataLines = 0;
  /** The last piece ended with CR: an LF first in the next one belongs to that line end. */
  #afterCr = false;

  /**
   * @param maxChars bound on the characters held between calls (a line without its end, plus the data of
   *   an event without its empty line), in UTF-16 code units.
   */
  constructor(private readonly maxChars: number) {}

  /**
   * Parses `text`, the next piece of the stream, calling `sink.onEvent` for each event it completes.
   *
   * @throws SseEventTooLarge when more than `maxChars` would be held; the parser is then empty.
   * @throws what `sink.onEvent` throws (the rest of `text` is not parsed).
   */
  feed(text: string, sink: SseDataSink): void {
    let start = 0;
    const n = text.length;
    if (this.#afterCr && n > 0) {
      this.#afterCr = false;
      if (text.charCodeAt(0) === LF) start = 1;
    }
    let lf = text.indexOf('\n', start);
    let cr = text.indexOf('\r', start);
    while (start < n) {
      let end: number;
      if (cr < 0 || (lf >= 0 && lf < cr)) {
        if (lf < 0) break;
        end = lf;
      } else {
        end = cr;
      }
      let line: string;
      if (this.#partial.length > 0) {
        line = this.#partial + text.slice(start, end);
        this.#partial = '';
        this.#line(line, 0, line.length, sink);
      } else {
        this.#line(text, start, end, sink);
      }
      start = end + 1;
      if (end === cr) {
        if (start === n) this.#afterCr = true;
        else if (text.charCodeAt(start) === LF) start++;
        cr = text.indexOf('\r', start);
      }
      if (lf >= 0 && lf < start) lf = text.indexOf('\n', start);
    }
    if (start < n) this.#partial = this.#partial.length > 0 ? this.#partial + text.slice(start) : text.slice(start);
    if (this.#partial.length + this.#data.length > this.maxChars) {
      this.#partial = '';
      this.#data = '';
      this.#dataLines = 0;
      throw new SseEventTooLarge(this.maxChars);
    }
  }

  /** One line, `text[start, end)`, without its line end. */
  #line(text: string, start: number, end: number, sink: SseDataSink): void {
    if (start === end) {
      if (this.#dataLines === 0) return;
      const data = this.#data;
      this.#data = '';
      this.#dataLines = 0;
      sink.onEvent(data);
      return;
    }
    // `data` then the line's end or a colon: a data line. Anything else (comments, other fields) is skipped.
    if (end - start < 4 || !text.startsWith('data', start)) return;
    let at = start + 4;
    if (at < end) {
      if (text.charCodeAt(at) !== COLON) return;
      at++;
      if (at < end && text.charCodeAt(at) === SPACE) at++;
    }
    const value = text.slice(at, end);
    this.#data = this.#dataLines === 0 ? value : `${this.#data}\n${value}`;
    this.#dataLines++;
  }
}
