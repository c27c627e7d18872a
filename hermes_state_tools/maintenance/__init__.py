"""Commands that examine or change an existing database: check, repair, rebuild, vacuum, maintain, prune, upgrade."""
