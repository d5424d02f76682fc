import { describe, expect, it } from 'vitest';
import { asksForPerson, createBuiltinModel, HANDOFF_ANSWER } from '../../src/models/builtin/builtin-model.js';
import type { ModelMessage, ModelPart, ModelTurnInput, Passage } from '../../src/models/port.js';

function passage(chunk_id: string, title: string, heading: string, text: string): Passage {
  return { document_id: `doc-${chunk_id}`, chunk_id, title, heading, text, score: 1 };
}

const PASSAGES: Passage[] = [
  passage(
    'c-http',
    'HTTP',
    'HTTP > Class: http.Agent',
    'An Agent is responsible for managing connection persistence and reuse for HTTP clients. ' +
      'It maintains a queue of pending requests for a given host and port.',
  ),
  passage(
    'c-streams',
    'Stream',
    'Stream > Readable streams',
    '# Readable streams\n\nReadable streams are an abstraction for a source from which data is consumed.\n' +
      'Examples include process.stdin and HTTP responses on the client.\n\n' +
      '```js\nconst r = fs.createReadStream("file.txt");\n```\n\n' +
      '- Use pipeline() to connect streams and forward errors.',
  ),
  passage(
    'c-buffer',
    'Buffer',
    '',
    'Buffer objects represent a fixed-length sequence of bytes. Many Node.js APIs support buffers.',
  ),
];

function input(question: string, extra: Partial<ModelTurnInput> = {}): ModelTurnInput {
  const messages: ModelMessage[] = [
    { role: 'system', content: 'You are a helpful support agent.' },
    { role: 'user', content: question },
  ];
  return { model: 'builtin', messages, passages: PASSAGES, tools: [], ...extra };
}

async function collect(
  turn: ModelTurnInput,
  signal: AbortSignal = new AbortController().signal,
): Promise<{ parts: ModelPart[]; text: string; deltas: string[] }> {
  const parts: ModelPart[] = [];
  const deltas: string[] = [];
  await createBuiltinModel().stream(turn, signal, (p) => {
    parts.push(p);
    if (p.type === 'text-delta') deltas.push(p.delta);
  });
  return { parts, text: deltas.join(''), deltas };
}

function markers(text: string): number[] {
  return [...new Set([...text.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))];
}

function finish(parts: ModelPart[]): Extract<ModelPart, { type: 'finish' }> {
  const f = parts.at(-1);
  if (f?.type !== 'finish') throw new Error('last part is not finish');
  return f;
}

describe('builtin model', () => {
  it('is named builtin', () => {
    expect(createBuiltinModel().name).toBe('builtin');
  });

  it('quotes the matching sentence and cites its passage with the right marker', async () => {
    const { text, parts } = await collect(input('How do readable streams work?'));
    expect(text).toBe('Readable streams are an abstraction for a source from which data is consumed [2].');
    expect(finish(parts)).toEqual({ type: 'finish', reason: 'stop', passagesUsed: ['c-streams'] });
  });

  it('matches stemmed forms (streaming ~ streams, buffer ~ buffers)', async () => {
    const { text } = await collect(input('What about streaming?'));
    expect(text).toContain('[2]');
    const b = await collect(input('buffer'));
    expect(b.text).toContain('[3]');
  });

  it('combines sentences from several passages in passage order, with a lead', async () => {
    const { text, parts } = await collect(input('How does the HTTP agent reuse connections, and what are readable streams?'));
    expect(text.startsWith('Here is what the knowledge base says: ')).toBe(true);
    expect(text).toContain('An Agent is responsible for managing connection persistence and reuse for HTTP clients [1].');
    expect(text).toContain('Readable streams are an abstraction for a source from which data is consumed [2].');
    expect(text.indexOf('[1]')).toBeLessThan(text.indexOf('[2]'));
    const used = finish(parts).passagesUsed ?? [];
    expect(used).toEqual(markers(text).map((n) => PASSAGES[n - 1]?.chunk_id));
    expect(used).toEqual(['c-http', 'c-streams']);
  });

  it('never quotes more than 3 sentences', async () => {
    const many = Array.from({ length: 6 }, (_, i) =>
      passage(`k${i}`, 'Keys', '', `Rotate key number ${i} weekly. Keys expire after ${i + 1} days.`),
    );
    const { text } = await collect(input('rotate keys expire weekly', { passages: many }));
    expect(text.match(/\[\d+\]/g)?.length ?? 0).toBeLessThanOrEqual(3);
  });

  it('says it found nothing, exactly, and cites nothing', async () => {
    const { text, parts } = await collect(input('What is the weather in Paris tomorrow?'));
    expect(text).toBe('I could not find anything about that in the knowledge base.');
    expect(finish(parts).passagesUsed).toEqual([]);
    const none = await collect(input('readable streams', { passages: [] }));
    expect(none.text).toBe('I could not find anything about that in the knowledge base.');
  });

  it('answers a greeting without citing', async () => {
    const { text, parts } = await collect(input('Hello!'));
    expect(text).toBe('Hello! Ask me a question and I will look it up in the knowledge base.');
    expect(finish(parts).passagesUsed).toEqual([]);
  });

  it('streams one delta per word, concatenating to the answer', async () => {
    const { deltas, text } = await collect(input('How does the HTTP agent reuse connections for readable streams?'));
    expect(deltas.length).toBe(text.split(/\s+/).filter(Boolean).length);
    for (const d of deltas) expect(d).toMatch(/^\S+\s*$/);
    expect(deltas.join('')).toBe(text);
  });

  it('yields text deltas, then usage, then finish; no tool call for a question', async () => {
    const turn = input('How do readable streams work?', {
      tools: [{ name: 'handoff', description: 'Hand off to a human', parameters: { type: 'object' } }],
    });
    const { parts, text } = await collect(turn);
    const types = parts.map((p) => p.type);
    expect(types.slice(-2)).toEqual(['usage', 'finish']);
    expect(types.slice(0, -2).every((t) => t === 'text-delta')).toBe(true);
    expect(types).not.toContain('tool-call');
    const usage = parts.at(-2);
    if (usage?.type !== 'usage') throw new Error('no usage');
    expect(text).toBe('Readable streams are an abstraction for a source from which data is consumed [2].');
    // o200k_base counts of that text (16) and of the two messages plus the three passages (123).
    expect(usage.usage).toEqual({ input_tokens: 123, output_tokens: 16 });
  });

  it('is deterministic, also when history holds the same answer', async () => {
    const first = await collect(input('How do readable streams work?'));
    const again = await collect(input('How do readable streams work?'));
    expect(again.parts).toEqual(first.parts);
    const history: ModelMessage[] = [
      { role: 'system', content: 'You are a helpful support agent.' },
      { role: 'user', content: 'How do readable streams work?' },
      { role: 'assistant', content: first.text },
      { role: 'user', content: 'How do readable streams work?' },
    ];
    const repeated = await collect(input('', { messages: history }));
    expect(repeated.text).toBe(first.text);
    expect(finish(repeated.parts)).toEqual(finish(first.parts));
  });

  it('stops and throws when the signal aborts mid-stream', async () => {
    const ac = new AbortController();
    const model = createBuiltinModel({ wordDelayMs: 5 });
    const seen: ModelPart[] = [];
    const run = model.stream(input('How does the HTTP agent reuse connections?'), ac.signal, (p) => {
      seen.push(p);
      if (seen.length === 2) ac.abort(new Error('client went away'));
    });
    await expect(run).rejects.toThrow('client went away');
    expect(seen.length).toBe(2);
    expect(seen.some((p) => p.type === 'finish' || p.type === 'usage')).toBe(false);
  });

  it('throws an AbortError when the signal is already aborted', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(collect(input('readable streams'), ac.signal)).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('cuts the answer to maxOutputTokens with finish reason length', async () => {
    const { text, parts } = await collect(input('How do readable streams work?', { maxOutputTokens: 4 }));
    expect(text).toBe('Readable streams are an');
    expect(parts.at(-2)).toEqual({ type: 'usage', usage: { input_tokens: 123, output_tokens: 4 } });
    expect(finish(parts)).toEqual({ type: 'finish', reason: 'length', passagesUsed: [] });
  });

  it('lets other work interleave between words', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    const model = createBuiltinModel({ wordDelayMs: 2 });
    let words = 0;
    await model.stream(input('How does the HTTP agent reuse connections?'), new AbortController().signal, (p) => {
      if (p.type === 'text-delta') words++;
    });
    clearInterval(timer);
    expect(words).toBeGreaterThan(5);
    expect(ticks).toBeGreaterThan(0);
  });
});

describe('builtin model: asking for a person', () => {
  const HANDOFF_TOOL = { name: 'handoff_to_human', description: 'Hand off to a person', parameters: { type: 'object' } };

  it.each([
    'Can I talk to a human?', 'I want to speak with someone', 'connect me to an operator', 'Please transfer me to a representative',
    'put me through to a real person', 'I need to talk to someone', 'human', 'operator please', 'A real person!', 'I want a human',
  ])('%j asks for a person', (text) => {
    expect(asksForPerson(text)).toBe(true);
  });

  it.each([
    'How do I stream a reply?', 'I need an agent that answers questions', 'How do people sign in?', 'I want a human-readable format',
    'How do I talk to the agent over a socket?', 'What does the operator role allow?',
  ])('%j does not', (text) => {
    expect(asksForPerson(text)).toBe(false);
  });

  it('says HANDOFF_ANSWER, then calls handoff_to_human and finishes with tool_calls, when the agent offers the tool', async () => {
    const { parts, text } = await collect(input('Can I talk to a human, please?', { tools: [HANDOFF_TOOL] }));
    expect(text).toBe(HANDOFF_ANSWER);
    const tail = parts.filter((p) => p.type !== 'text-delta');
    expect(tail.map((p) => p.type)).toEqual(['tool-call', 'usage', 'finish']);
    const call = tail[0];
    if (call?.type !== 'tool-call') throw new Error('no tool call');
    expect(call.call.name).toBe('handoff_to_human');
    expect(JSON.parse(call.call.arguments)).toEqual({ reason: 'The visitor asked for a person.' });
    expect(call.call.id).toMatch(/^call_[0-9a-f]{16}$/);
    expect(finish(parts)).toEqual({ type: 'finish', reason: 'tool_calls', passagesUsed: [] });
  });

  it('answers from the knowledge base as usual when the tool is not offered', async () => {
    const { parts } = await collect(input('Can I talk to a human, please?'));
    expect(parts.map((p) => p.type)).not.toContain('tool-call');
    expect(finish(parts).reason).toBe('stop');
  });
});


describe('builtin model: choosing sentences that address the question', () => {
  const FS_READFILE = passage(
    'c-readfile',
    'fs',
    'File system > Callback API > fs.readFile(path[, options], callback)',
    'path {string|Buffer|URL|integer} filename or file descriptor\noptions {Object|string}\nencoding {string|null} Default: null\n\n' +
      'Asynchronously reads the entire contents of a file.\n\n' +
      "import { readFile } from 'node:fs';\n\nreadFile('/etc/passwd', (err, data) => {\n  if (err) throw err;\n  console.log(data);\n});\n\n" +
      'The callback is passed two arguments (err, data), where data is the contents of the file.\n\n' +
      'If options is a string, then it specifies the encoding:',
  );
  const OTHER = passage('c-other', 'os', 'OS > os.tmpdir()', 'Returns the default directory for temporary files as a string. The contents of the temporary folder vary.');

  it('names the API of the section in front of its opening sentence, skips code, parameter lists and lead-ins to code', async () => {
    const { text, parts } = await collect(input('How do I read the entire contents of a file?', { passages: [FS_READFILE] }));
    // The second prose sentence only repeats `contents` and `file`: too weak to add.
    expect(text).toBe('fs.readFile(): Asynchronously reads the entire contents of a file [1].');
    expect(finish(parts).passagesUsed).toEqual(['c-readfile']);
  });

  it('keeps a parameter line with a description as "name: description", and drops it without one', async () => {
    const p = passage('c-sock', 'net', 'Net > net.createConnection(options)', 'noDelay {boolean} If set to true, it disables the use of Nagle\'s algorithm immediately.\nkeepAlive {boolean} Default: false');
    const { text } = await collect(input('How do I disable Nagle\'s algorithm?', { passages: [p] }));
    expect(text).toBe("net.createConnection(): noDelay: If set to true, it disables the use of Nagle's algorithm immediately [1].");
    const none = await collect(input('keepAlive default', { passages: [p] }));
    expect(none.text).toBe('I could not find anything about that in the knowledge base.');
  });

  it('does not pad the answer with a sentence of another passage that shares one common word', async () => {
    const { text, parts } = await collect(input('How do I read the entire contents of a file?', { passages: [FS_READFILE, OTHER] }));
    expect(text).not.toContain('[2]');
    expect(finish(parts).passagesUsed).toEqual(['c-readfile']);
  });

  it('matches Porter2 stems of the question against the passage (listeners ~ listening, registered ~ register)', async () => {
    const p = passage('c-ev', 'events', 'Events > emitter.once(eventName, listener)', 'Adds a one-time listener function for the event named eventName. The next time eventName is triggered, this listener is removed and then invoked.');
    const { text } = await collect(input('How are one-time listeners registered?', { passages: [p] }));
    expect(text.startsWith('emitter.once(): Adds a one-time listener function for the event named eventName [1].')).toBe(true);
  });
});
