"""The security tests: one per finding of the review, each playing its attacker."""
