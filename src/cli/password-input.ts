/**
 * Reading a password for the `parley` command line without it ever being in argv (where `ps` and shell
 * history would show it): from a hidden prompt on a terminal, or from the first line of stdin otherwise
 * (`printf '%s\n' "$PW" | npm run parley -- users set-password --email ...`).
 */
import type { ReadStream } from 'node:tty';

/** A password could not be read (cancelled with Ctrl-C, or stdin was empty). */
export class PasswordInputError extends Error {}

/**
 * The password: asked twice on a terminal (echo off, on stderr so stdout stays clean) and compared; else
 * the first line of stdin, without its line ending. Throws PasswordInputError.
 */
export async function readPassword(stdin: NodeJS.ReadStream = process.stdin, stderr: NodeJS.WriteStream = process.stderr): Promise<string> {
  if (stdin.isTTY) {
    const first = await promptHidden(stdin as ReadStream, stderr, 'New password: ');
    const second = await promptHidden(stdin as ReadStream, stderr, 'Repeat it: ');
    if (first !== second) throw new PasswordInputError('The two passwords differ; nothing was changed.');
    return first;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk as Buffer);
  const line = Buffer.concat(chunks).toString('utf8').split(/\r?\n/, 1)[0] ?? '';
  if (line === '') throw new PasswordInputError('No password on stdin: pipe it in (one line), or run this on a terminal to be asked.');
  return line;
}

/** Reads one line from a terminal in raw mode, echoing nothing. Backspace edits; Ctrl-C cancels. */
function promptHidden(stdin: ReadStream, out: NodeJS.WriteStream, question: string): Promise<string> {
  out.write(question);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  let input = '';
  return new Promise((resolve, reject) => {
    const finish = () => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      out.write('\n');
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') { finish(); resolve(input); return; }
        if (ch === '\u0003' || ch === '\u0004') { finish(); reject(new PasswordInputError('Cancelled; nothing was changed.')); return; }
        if (ch === '\u007f' || ch === '\b') { input = [...input].slice(0, -1).join(''); continue; }
        input += ch;
      }
    };
    stdin.on('data', onData);
  });
}
