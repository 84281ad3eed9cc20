/** The inbound APIs by name. */
import type { ApiName } from './names.js';
import { chatApi } from './chat.js';
import { messagesApi } from './messages.js';
import { responsesApi } from './responses.js';
import type { InboundApi } from './types.js';

export const APIS: Readonly<Record<ApiName, InboundApi>> = { chat: chatApi, responses: responsesApi, messages: messagesApi };
