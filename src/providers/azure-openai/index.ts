/**
 * Azure OpenAI upstreams (`https://<resource>.openai.azure.com`). The body is OpenAI Chat
 * Completions, so it is sent as is; what differs from OpenAI is the URL and the key header
 * (Microsoft Learn, "Azure OpenAI in Azure AI Foundry Models REST API reference", data plane
 * inference):
 * - chat: `POST {base_url}/openai/deployments/{deployment}/chat/completions?api-version={options.api_version}`,
 *   where the deployment is the target's `model` in the config (Azure picks the model by
 *   the deployment in the path and ignores the body's `model`);
 * - responses (only with `options.responses: true`): the v1 API, `POST {base_url}/openai/v1/responses`
 *   with the deployment name as the body's `model` and no dated `api-version` (Microsoft Learn,
 *   "Azure OpenAI API version lifecycle", v1 API; the Responses API is limited to some regions and models);
 * - the key goes in the `api-key` header, never `Authorization`.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { LiveUpstream } from '../../config/types.js';
import { createOpenAIStyle } from '../openai-compatible/base.js';
import type { ApiName, Provider, ProviderKind } from '../types.js';

/**
 * Schema of an `azure-openai` upstream's `options:` block.
 * - `api_version`: the dated data-plane `api-version` query parameter of chat calls
 *   (default `2024-10-21`, the GA inference version in Microsoft's REST reference);
 * - `responses`: the resource serves the Responses API through the v1 API (default false).
 */
export const AzureOpenAIOptionsSchema = Type.Object(
  {
    api_version: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$', default: '2024-10-21' }),
    responses: Type.Boolean({ default: false }),
  },
  { additionalProperties: false, default: {} },
);
/** The options with defaults applied (what `LiveUpstream.options` holds for this kind). */
export type AzureOpenAIOptions = Static<typeof AzureOpenAIOptionsSchema>;

/**
 * The request path (with query) for one call, below the base URL's own path prefix.
 * @param deployment the Azure deployment name (the body's `model`, i.e. the target's model id).
 */
export function azurePath(api: ApiName, deployment: string, options: AzureOpenAIOptions): string {
  if (api === 'responses') return '/openai/v1/responses';
  return `/openai/deployments/${encodeURIComponent(deployment)}/chat/completions?api-version=${encodeURIComponent(options.api_version)}`;
}

/**
 * Creates the provider for one `azure-openai` upstream (`base_url` required, e.g.
 * `https://my-resource.openai.azure.com`; a path on it, such as an API Management prefix, is kept).
 * `send` throws what `sendUpstream` throws (undici / Node network errors before headers).
 */
export function createAzureOpenAI(upstream: LiveUpstream): Provider {
  const options = upstream.options as AzureOpenAIOptions;
  return createOpenAIStyle(upstream, {
    wireApis: new Set<ApiName>(options.responses ? ['chat', 'responses'] : ['chat']),
    authHeaders: upstream.apiKey ? { 'api-key': upstream.apiKey } : {},
    // OpenTelemetry GenAI conventions, gen_ai.provider.name well-known values: Azure OpenAI.
    genAiProvider: 'azure.ai.openai',
    path: (req) => {
      const api: ApiName = req.api === 'responses' && options.responses ? 'responses' : 'chat';
      const path = azurePath(api, typeof req.body['model'] === 'string' ? req.body['model'] : '', options);
      return api === 'responses' && req.operation === 'compact' ? `${path}/compact` : path;
    },
  });
}

/** Registry entry for `provider: azure-openai`. */
export const azureOpenAIKind: ProviderKind = { create: createAzureOpenAI, options: AzureOpenAIOptionsSchema, needsBaseUrl: true };
