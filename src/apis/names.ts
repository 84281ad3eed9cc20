/**
 * The APIs the gateway speaks, on both sides of a call: as a *client API* (what a caller
 * sends to Switchyard) and as a *wire API* (what an upstream account speaks).
 * - `chat`: OpenAI `POST /v1/chat/completions`;
 * - `responses`: OpenAI `POST /v1/responses`;
 * - `messages`: Anthropic `POST /v1/messages`.
 * A leaf module: every layer may name an API.
 */
export type ApiName = 'chat' | 'responses' | 'messages';

/** Every API, in a fixed order (tables, the support matrix in docs/translation.md). */
export const API_NAMES: readonly ApiName[] = ['chat', 'responses', 'messages'];
