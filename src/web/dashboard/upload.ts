/**
 * Document uploads with progress (`POST /v1/knowledge-bases/{kb_id}/documents`, a raw body with `?title=`,
 * API.md "Knowledge bases"). fetch() reports no upload progress, so this one request goes through
 * XMLHttpRequest, whose `upload` events do.
 */
import { ApiError, errorFromBody } from './api.js';
import type { Session } from './session.js';
import { contentTypeOf, titleOf } from './document-files.js';

export { ACCEPTED } from './document-files.js';

/** One XMLHttpRequest upload; resolves with its status and parsed body. */
function post(url: string, file: File, headers: Record<string, string>, onProgress: (sent: number, total: number) => void, signal: AbortSignal): Promise<{ status: number; statusText: string; body: unknown }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    for (const [name, value] of Object.entries(headers)) xhr.setRequestHeader(name, value);
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      let body: unknown = null;
      try { body = JSON.parse(xhr.responseText); } catch { /* not JSON */ }
      resolve({ status: xhr.status, statusText: xhr.statusText, body });
    };
    xhr.onerror = () => reject(new ApiError(0, 'network_error', 'The upload could not reach Parley. Check your connection and try again.'));
    xhr.onabort = () => reject(new DOMException('The upload was cancelled.', 'AbortError'));
    signal.addEventListener('abort', () => xhr.abort(), { once: true });
    xhr.send(file);
  });
}

/**
 * Uploads `file` into knowledge base `kbId` as the signed-in person, calling `onProgress(sent, total)`
 * (bytes) as the body goes out. Resolves with the new document's id (202: ingestion goes on in the
 * background). Throws ApiError with the API's code and message (415 `unsupported_content_type`, 413
 * `body_too_large`, ...); after 401 `expired_token` it refreshes once and uploads again.
 */
export async function uploadDocument(session: Session, kbId: string, file: File, onProgress: (sent: number, total: number) => void, signal: AbortSignal): Promise<string> {
  const url = `/v1/knowledge-bases/${encodeURIComponent(kbId)}/documents?title=${encodeURIComponent(titleOf(file.name))}`;
  for (let attempt = 0; ; attempt++) {
    const headers = { ...(await session.authHeaders()), 'Content-Type': contentTypeOf(file) };
    const res = await post(url, file, headers, onProgress, signal);
    if (res.status === 202) return (res.body as { id: string }).id;
    const err = errorFromBody(res.status, res.statusText, res.body);
    if (err.code === 'expired_token' && attempt === 0) {
      session.dropAccessToken();
      continue;
    }
    throw err;
  }
}
