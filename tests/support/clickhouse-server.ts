/**
 * CLICKHOUSE_TEST_URL: a ClickHouse HTTP interface for the distributed-mode tests, as the
 * password-less default user (scripts/clickhouse-server.sh start; .ci/run starts one). In CI a
 * missing one is an error, not a reason to skip; elsewhere those tests skip with this message.
 */
export function clickhouseTestUrl(): string | undefined {
  const url = process.env.CLICKHOUSE_TEST_URL?.trim();
  if (url) return url;
  if (process.env.CI) {
    throw new Error('CI is set but CLICKHOUSE_TEST_URL is not: the distributed-mode tests cannot be skipped in CI (start a server with scripts/clickhouse-server.sh start)');
  }
  console.warn('CLICKHOUSE_TEST_URL is not set: the distributed-mode (ClickHouse over HTTP) tests skip. Run scripts/clickhouse-server.sh start and export CLICKHOUSE_TEST_URL=http://127.0.0.1:8123');
  return undefined;
}

/** The same server as the read-only analyst user of deploy/clickhouse/users.d/analyst.xml. */
export function analystUrl(url: string): string {
  const analyst = new URL(url);
  analyst.username = 'analyst';
  // The password scripts/clickhouse-server.sh gives that user (docker-compose.yml's default too).
  analyst.password = process.env.CLICKHOUSE_ANALYST_PASSWORD ?? 'analyst';
  analyst.pathname = '/analytics';
  return analyst.toString();
}
