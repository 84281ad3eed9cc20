/** The client app's errors, as a plugin. */
import fp from 'fastify-plugin';
import { useGatewayErrors } from '../errors/reply.js';

/** Answers every error and unknown route of the client app with an OpenAI-style JSON error. */
export const errors = fp(
  async (app) => {
    useGatewayErrors(app, 'request failed');
  },
  { name: 'switchyard-errors' },
);
