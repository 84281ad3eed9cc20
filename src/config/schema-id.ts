/** The shape of every id and name in the config (upstream ids, model and key names). */
import { Type } from '@sinclair/typebox';

/** Letters, digits and `._:/-`, starting with a letter or digit; at most 128 characters. */
export const Id = Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9][A-Za-z0-9._:/-]*$' });

/**
 * The longest model id a client may send, and an alias may be, in characters: a longer
 * `model` is refused with 400 before any alias or glob is looked at (pipeline/select.ts).
 */
export const MODEL_ID_MAX_CHARS = 256;
