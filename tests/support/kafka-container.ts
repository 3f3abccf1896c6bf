/**
 * Vitest global setup: where no broker is given (KAFKA_BROKERS unset), not in CI, and a Docker
 * engine answers, a Kafka container (KRaft) is started with testcontainers and its address is put in
 * KAFKA_BROKERS for every test file. Without an engine nothing happens and the Kafka tests skip
 * locally; CI (no Docker there) must set KAFKA_BROKERS, which tests/support/kafka.ts enforces.
 */
import type { StartedKafkaContainer } from '@testcontainers/kafka';

const IMAGE = 'confluentinc/cp-kafka:7.9.0';

export default async function startKafkaContainer(): Promise<(() => Promise<void>) | void> {
  if (process.env.KAFKA_BROKERS || process.env.CI) return;
  const { getContainerRuntimeClient } = await import('testcontainers');
  try {
    await getContainerRuntimeClient();
  } catch {
    return;
  }
  const { KafkaContainer } = await import('@testcontainers/kafka');
  const container: StartedKafkaContainer = await new KafkaContainer(IMAGE).withKraft().start();
  process.env.KAFKA_BROKERS = `${container.getHost()}:${container.getMappedPort(9093)}`;
  return async () => {
    await container.stop();
  };
}
