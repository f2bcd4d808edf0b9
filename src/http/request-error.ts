/** A request error of any of our HTTP servers: HTTP status, message and the offending field. */
export class RequestError extends Error {
  readonly status: number;
  readonly param: string | null;
  readonly type: string;
  readonly code: string | null;
  constructor(status: number, message: string, param: string | null = null, code: string | null = null) {
    super(message);
    this.name = "RequestError";
    this.status = status;
    this.param = param;
    this.code = code;
    this.type =
      status === 401 ? "authentication_error" : status >= 500 ? "server_error" : "invalid_request_error";
  }
}
