import fs from 'node:fs';
import { CliError } from './cli-output';

/** Ctrl-C, Ctrl-D, backspace and delete as a terminal in raw mode sends them. */
const INTERRUPT = '\u0003';
const END_OF_INPUT = '\u0004';
const ERASE = new Set(['\u007f', '\b']);

/**
 * A secret read where no one else sees it: from `file` (`-` for standard input), else from
 * standard input, typed at a terminal without echo (a prompt on stderr) or piped. Never from the
 * command line, where the shell history and `ps` keep it. One final line feed (what `echo` and
 * editors add) is not part of it. At most `limit` characters: more is refused, never cut.
 */
export async function readSecret(what: string, limit: number, file?: string): Promise<string> {
  const raw = file !== undefined && file !== '-' ? readFile(file, limit) : process.stdin.isTTY ? await typed(what, limit) : await piped(limit);
  const value = raw.replace(/\r?\n$/, '');
  if (value === '') throw new CliError(`no ${what} given: type it at the prompt, pipe it on standard input or name a file with --value-file`);
  if (value.length > limit) throw new CliError(`the ${what} is longer than ${limit} characters`);
  return value;
}

function readFile(file: string, limit: number): string {
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch (error) {
    throw new CliError(`--value-file ${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`);
  }
  // Four bytes a character at most, and a final CR LF: a larger file is refused unread.
  if (size > limit * 4 + 2) throw new CliError(`--value-file ${file}: larger than a credential value can be (${limit} characters)`);
  return fs.readFileSync(file, 'utf8');
}

async function piped(limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > limit * 4 + 2) throw new CliError(`standard input is larger than a credential value can be (${limit} characters)`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Typed at the terminal in raw mode, so the terminal echoes nothing; Enter ends it, Ctrl-C cancels. */
function typed(what: string, limit: number): Promise<string> {
  const input = process.stdin;
  // Echo goes off before the prompt shows: a value typed or pasted the moment the prompt appears
  // must never be echoed by the terminal.
  input.setRawMode(true);
  process.stderr.write(`${what[0].toUpperCase()}${what.slice(1)} (not shown as you type): `);
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (error?: CliError) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      if (error === undefined) resolve(value);
      else reject(error);
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === END_OF_INPUT) return finish();
        if (char === INTERRUPT) return finish(new CliError('cancelled: nothing was stored'));
        if (ERASE.has(char)) value = value.slice(0, -1);
        else value += char;
        if (value.length > limit) return finish(new CliError(`the ${what} is longer than ${limit} characters`));
      }
    };
    input.setEncoding('utf8');
    input.on('data', onData);
    input.resume();
  });
}
