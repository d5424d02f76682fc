/**
 * The part of the `ws` package (8.x, installed; it ships no types and @types/ws is not installed) that the
 * bench uses: the client in the load generator and the server of bench/baseline/ws-server.ts.
 */
declare module 'ws' {
  import type { EventEmitter } from 'node:events';
  import type { IncomingMessage, Server as HttpServer } from 'node:http';
  import type { Duplex } from 'node:stream';

  export interface ClientOptions {
    headers?: Record<string, string>;
    perMessageDeflate?: boolean;
    skipUTF8Validation?: boolean;
    handshakeTimeout?: number;
    maxPayload?: number;
  }

  export class WebSocket extends EventEmitter {
    static readonly CONNECTING: 0;
    static readonly OPEN: 1;
    static readonly CLOSING: 2;
    static readonly CLOSED: 3;
    constructor(url: string, options?: ClientOptions);
    readonly readyState: 0 | 1 | 2 | 3;
    /** Bytes queued in the socket, not yet sent. */
    readonly bufferedAmount: number;
    send(data: string | Buffer, cb?: (err?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    ping(data?: Buffer): void;
    on(event: 'open', listener: () => void): this;
    on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): this;
    on(event: 'close', listener: (code: number, reason: Buffer) => void): this;
    on(event: 'error', listener: (err: Error & { code?: string }) => void): this;
    on(event: 'unexpected-response', listener: (req: unknown, res: IncomingMessage) => void): this;
    on(event: string, listener: (...args: never[]) => void): this;
  }

  export interface ServerOptions {
    server?: HttpServer;
    noServer?: boolean;
    perMessageDeflate?: boolean;
    skipUTF8Validation?: boolean;
    maxPayload?: number;
    clientTracking?: boolean;
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: ServerOptions);
    readonly clients: Set<WebSocket>;
    handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, cb: (ws: WebSocket, req: IncomingMessage) => void): void;
    close(cb?: () => void): void;
  }

  export default WebSocket;
}
