/**
 * TLS for tests: a self-signed certificate made here with openssl (on the machine: Debian's `openssl`
 * package), and a raw TLS client that keeps one connection and sends HTTP/1.1 requests on it, so a test
 * can tell which certificate a connection got and whether it survives a reload.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';

/** A certificate and its key on disk (PEM), and the certificate's text for a client's `ca`. */
export interface TestCertificate {
  certFile: string;
  keyFile: string;
  /** The certificate, PEM: trust it as a CA (it is self-signed). */
  pem: string;
}

/**
 * Makes a self-signed P-256 certificate valid for `localhost` and 127.0.0.1 with common name `cn`, into
 * `<dir>/<name>.crt` and `<dir>/<name>.key`. Throws what openssl throws.
 */
export function makeCertificate(dir: string, name: string, cn = name): TestCertificate {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-keyout', keyFile, '-out', certFile, '-subj', `/CN=${cn}`, '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ], { stdio: 'ignore' });
  return { certFile, keyFile, pem: readFileSync(certFile, 'utf8') };
}

/** One kept TLS connection to 127.0.0.1:`port`. */
export interface TlsConnection {
  /** The common name of the certificate the server showed on this connection. */
  peerName: string;
  /** Sends `GET path` (keep-alive) with `headers`, and resolves with the status, lower-cased headers and body. */
  get(path: string, headers?: Record<string, string>): Promise<{ status: number; headers: Record<string, string>; body: string }>;
  close(): void;
}

/** Opens a TLS connection trusting `ca` (PEM). Rejects when the handshake fails. */
export function openTls(port: number, ca: string | string[]): Promise<TlsConnection> {
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
      let buf = Buffer.alloc(0);
      let waiter: (() => void) | undefined;
      socket.on('data', (d: Buffer) => { buf = Buffer.concat([buf, d]); waiter?.(); });
      resolve({
        peerName: socket.getPeerCertificate().subject.CN as string,
        get: (path, extra = {}) => new Promise((res, rej) => {
          buf = Buffer.alloc(0);
          const timer = setTimeout(() => rej(new Error(`no response to GET ${path} within 5 s`)), 5000);
          waiter = () => {
            const end = buf.indexOf('\r\n\r\n');
            if (end < 0) return;
            const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
            const headers: Record<string, string> = {};
            for (const l of lines) { const i = l.indexOf(':'); headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim(); }
            const length = Number(headers['content-length'] ?? 0);
            if (buf.length < end + 4 + length) return;
            clearTimeout(timer);
            waiter = undefined;
            res({ status: Number(statusLine!.split(' ')[1]), headers, body: buf.subarray(end + 4, end + 4 + length).toString('utf8') });
          };
          const lines = Object.entries(extra).map(([k, v]) => `${k}: ${v}\r\n`).join('');
          socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n${lines}\r\n`);
        }),
        close: () => socket.destroy(),
      });
    });
    socket.once('error', reject);
  });
}
