import { createHash } from 'node:crypto';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** One encoding of a file and its strong ETag. */
interface Encoded {
  body: Buffer;
  etag: string;
}

/** A file served from memory, compressed once at start. */
export interface StaticAsset {
  type: string;
  identity: Encoded;
  br: Encoded;
  gzip: Encoded;
}

export function staticAsset(bytes: Buffer, type: string): StaticAsset {
  const etag = (tag: string, body: Buffer) => ({ body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}${tag}"` });
  return {
    type,
    identity: etag('', bytes),
    br: etag('-br', brotliCompressSync(bytes, { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } })),
    gzip: etag('-gz', gzipSync(bytes, { level: 9 })),
  };
}

function pick(asset: StaticAsset, request: FastifyRequest): Encoded {
  const accepted = String(request.headers['accept-encoding'] ?? '');
  if (/\bbr\b/.test(accepted)) return asset.br;
  if (/\bgzip\b/.test(accepted)) return asset.gzip;
  return asset.identity;
}

/** Sends the encoding the client accepts, with its ETag; 304 when the client's copy is current. */
export function sendAsset(request: FastifyRequest, reply: FastifyReply, asset: StaticAsset, headers: Record<string, string>) {
  const encoded = pick(asset, request);
  reply.headers(headers).header('Vary', 'Accept-Encoding').header('ETag', encoded.etag);
  const match = request.headers['if-none-match'];
  if (match && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === encoded.etag)) {
    return reply.code(304).send();
  }
  if (encoded !== asset.identity) reply.header('Content-Encoding', encoded === asset.br ? 'br' : 'gzip');
  return reply.type(asset.type).send(encoded.body);
}
