import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-code';

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const inflateRaw = promisify(zlib.inflateRaw);
const brotliDecompress = promisify(zlib.brotliDecompress);

/** More codings than any client applies; beyond them the body is refused rather than unwrapped layer after layer. */
const MAX_CODINGS = 3;

/**
 * A body as the upstream reads it once it undoes its Content-Encoding (RFC 9110 8.4: the codings
 * in the order they were applied, undone last first): gzip, deflate and br, each layer bounded
 * by `maxBytes` decoded, so a small body that inflates beyond it is refused (413) without ever
 * being held whole. An encoding that cannot be undone here is refused 415 naming it, and a body
 * that is not what its encoding says is refused 400: either way policies would not see what the
 * upstream may (docs/proxy.md "What the proxy reads as the upstream does").
 */
export async function decodedContent(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Promise<Buffer> {
  if (contentEncoding === undefined) return body;
  const codings = contentEncoding
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length > MAX_CODINGS) throw new AppError(ErrorCode.UnsupportedMediaType, `Content-Encoding applies more than ${MAX_CODINGS} codings`);
  let decoded = body;
  for (const coding of codings.reverse()) decoded = await undo(coding, decoded, maxBytes);
  return decoded;
}

async function undo(coding: string, body: Buffer, maxBytes: number): Promise<Buffer> {
  const options = { maxOutputLength: maxBytes };
  try {
    switch (coding) {
      case 'gzip':
      case 'x-gzip':
        return await gunzip(body, options);
      case 'deflate':
        // RFC 9110 names the zlib format; some clients send raw deflate, which upstreams accept too.
        return await inflate(body, options).catch((error: unknown) => (isTooLarge(error) ? Promise.reject(error) : inflateRaw(body, options)));
      case 'br':
        return await brotliDecompress(body, options);
    }
  } catch (error) {
    if (isTooLarge(error)) throw new AppError(ErrorCode.PayloadTooLarge, `Request body decodes to more than ${maxBytes} bytes, the limit for bodies inspected by policy`);
    throw AppError.invalid(`The request body is not valid ${coding} (Content-Encoding)`);
  }
  throw new AppError(ErrorCode.UnsupportedMediaType, `Content-Encoding ${JSON.stringify(coding)} cannot be read by policies; send gzip, deflate, br or none`);
}

function isTooLarge(error: unknown): boolean {
  return error instanceof RangeError || (error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE';
}
