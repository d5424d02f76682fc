import { ERROR_CATALOGUE, type ErrorCode, type ErrorType } from './catalogue.js';

/** One field-level validation problem: `path` is dotted (`model.provider`), `message` is for people. */
export interface FieldError {
  path: string;
  message: string;
}

/** The `error` object of API.md's error body and of the stream `error` event. */
export interface ErrorBody {
  type: ErrorType;
  code: ErrorCode;
  message: string;
  request_id?: string;
  errors?: FieldError[];
}

/**
 * The one error type of Parley. `type` and `status` come from the code catalogue
 * (src/errors/catalogue.ts, API.md "Errors"), so a code always maps to the same status.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly type: ErrorType;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  /** Extra response headers, e.g. `Retry-After` on 429. */
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.type = ERROR_CATALOGUE[code].type;
    this.status = ERROR_CATALOGUE[code].status;
    this.errors = options.errors;
    this.headers = options.headers;
  }

  /** The wire form: `{type, code, message, request_id?, errors?}`. */
  toBody(requestId?: string): ErrorBody {
    const body: ErrorBody = { type: this.type, code: this.code, message: this.message };
    if (requestId !== undefined) body.request_id = requestId;
    if (this.errors !== undefined) body.errors = this.errors;
    return body;
  }
}

/**
 * Any thrown value as an AppError; unknown failures become `internal_error` (500) without leaking details.
 * A store write refused because this process no longer holds the conversation's lease (code `lease_lost`:
 * another process took the conversation over, DESIGN.md "Several processes") is `interrupted`: the turn
 * was cut, and the process that took over stores it as such.
 */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if ((err as { code?: unknown } | null)?.code === 'lease_lost') {
    return new AppError('interrupted', 'Another Parley process took this conversation over during the turn, so the reply was not finished; fetch the messages, then send the message again.', { cause: err });
  }
  return new AppError('internal_error', 'An internal error occurred.', { cause: err });
}
