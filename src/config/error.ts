/** The one error type of config loading. */

/** Thrown for any problem with the config file; `message` lists every problem found. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
