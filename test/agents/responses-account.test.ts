/**
 * Codex and Claude Code, each on its own default model, against an account that speaks only
 * the Responses API (`openai-compatible` with `options: { chat: false, responses: true }`):
 * Codex's requests pass through as they are (code mode: `additional_tools`, the custom tool
 * `exec`), Claude Code's are translated from Messages.
 */
import { accountScenario } from '../helpers/agent-scenarios.js';

accountScenario('responses', 'openai-compatible', '{ chat: false, responses: true }');
