/**
 * Codex and Claude Code, each on its own default model, against an account that speaks only
 * chat completions (an `openai-compatible` upstream with default options): the Responses and
 * Messages requests reach it through the bridges, tool calls and their outputs included.
 */
import { accountScenario } from '../helpers/agent-scenarios.js';

accountScenario('chat', 'openai-compatible');
