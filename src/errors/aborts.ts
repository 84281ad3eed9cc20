/** Why a model call was aborted: the reasons its AbortController fires with. */

/** The client went away before the answer finished. */
export class ClientDisconnected extends Error {
  constructor() {
    super('client disconnected');
    this.name = 'ClientDisconnected';
  }
}

/** The gateway is shutting down and the call outlived the drain deadline. */
export class ShuttingDown extends Error {
  constructor() {
    super('the gateway is shutting down');
    this.name = 'ShuttingDown';
  }
}
