import type { EventType } from '../../schemas/event-contract.js';
import type { AvroCodec } from '../avro/codec.js';

/** Reasons and original bytes of messages that could not be encoded (relay) or loaded (loader). */
export const DEAD_LETTER_TOPIC = 'tracking.dead-letter.v1';

/** The topics of one installation: the catalog's names behind an optional prefix. */
export interface Topics {
  /** The event topics (several event types may share one), sorted. */
  events: string[];
  deadLetter: string;
  /** The installation's name of a catalog topic. */
  name(catalogTopic: string): string;
}

export function topicsOf(codec: Pick<AvroCodec, 'eventTypes' | 'route'>, prefix = ''): Topics {
  const name = (topic: string) => `${prefix}${topic}`;
  const catalog = new Set(codec.eventTypes.map((t) => codec.route(t as EventType).topic));
  return { events: [...catalog].map(name).sort(), deadLetter: name(DEAD_LETTER_TOPIC), name };
}
