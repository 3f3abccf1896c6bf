/*
 * clickhouse-local from libchdb.so, as a process of its own: hands its argv to chdb_query_cmdline,
 * the library's command-line entry point (the argument syntax of `clickhouse local`), and exits 0
 * when the query ran, 1 with the engine's message when it failed. scripts/clickhouse-server.sh
 * builds it with the system compiler and passes a query that starts the HTTP listener and then
 * keeps running: the engine serves ClickHouse's HTTP interface for as long as this process lives.
 */
#include <stdio.h>

/* From chdb.h (chdb-core), declared here so that only the library itself is needed to build. */
struct chdb_result;
extern struct chdb_result *chdb_query_cmdline(int argc, char **argv);
extern const char *chdb_result_error(struct chdb_result *result);

int main(int argc, char **argv) {
  struct chdb_result *result = chdb_query_cmdline(argc, argv);
  const char *error = result ? chdb_result_error(result) : "chdb_query_cmdline returned no result";
  if (error && *error) {
    fprintf(stderr, "%s\n", error);
    return 1;
  }
  return 0;
}
