import { ApiError } from '../errors.js';
import type { Answer } from './requirements.js';

/** A refusal of the requirement table as the error the HTTP layer renders. */
export const refusal = (answer: Answer): ApiError =>
  answer.code === undefined ? new ApiError(answer.status, answer.message) : new ApiError(answer.status, answer.message, { envelope: 'typed', code: answer.code });
