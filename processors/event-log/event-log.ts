/** One message of the event log: what the relay publishes and the loaders consume. */
export interface LogMessage {
  topic: string;
  /** The entity whose events must stay in order (a partition key). */
  key: string;
  value: Buffer;
}

/**
 * The seam between the relay and the broker: Kafka (kafkajs today, @platformatic/kafka later) in
 * the distributed mode, an in-process log in the embedded one.
 */
export interface EventLog {
  /** Resolves once every message is durably accepted (acks from all in-sync replicas). */
  publish(messages: LogMessage[]): Promise<void>;
  close(): Promise<void>;
}
