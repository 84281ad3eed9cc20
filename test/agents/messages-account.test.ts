/**
 * Codex and Claude Code, each on its own default model, against an account that speaks only
 * Anthropic's Messages API (the `anthropic` provider kind): Claude Code's requests pass
 * through as they are, Codex's are translated from Responses.
 */
import { accountScenario } from '../helpers/agent-scenarios.js';

accountScenario('messages', 'anthropic');
