"""Admin handlers: topics, partitions, configs, cluster and log dirs, records deletion."""
