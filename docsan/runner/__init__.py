"""The bundled vLLM runner: tier profiles, planner, guard, router, queue and backends."""
