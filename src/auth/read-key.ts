/**
 * Reads the key `switchyard hash-key` hashes when none is given on the command line: one
 * line from stdin. On a terminal it prompts on stderr and echoes nothing (readline writes its
 * echo to a stream that drops it); from a pipe it answers at the first newline, without
 * waiting for the writer to close the pipe.
 */
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';

/**
 * The first line of `input` (its end of line dropped, surrounding whitespace trimmed), or ''
 * when it ends before any character. Stops reading `input` once the line is in.
 * @param input usually `process.stdin`; a TTY is read with echo off.
 * @param prompt written to `promptTo` first, on a TTY only.
 */
export function readKeyLine(input: NodeJS.ReadStream, promptTo: NodeJS.WritableStream, prompt = 'key: '): Promise<string> {
  const terminal = input.isTTY === true;
  const muted = new Writable({ write: (_chunk, _enc, cb) => cb() });
  if (terminal) promptTo.write(prompt);
  const rl = createInterface({ input, output: muted, terminal });
  return new Promise((resolve) => {
    let done = false;
    const finish = (line: string): void => {
      if (done) return;
      done = true;
      rl.close();
      // A pipe left open by its writer must not keep the process alive.
      input.destroy();
      if (terminal) promptTo.write('\n');
      resolve(line.trim());
    };
    rl.once('line', finish);
    rl.once('close', () => finish(''));
  });
}
