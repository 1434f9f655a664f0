"""A small labelled set for the planning board's search: short task descriptions, and queries
that name one task each, either by its words (as a model types them: extra words, plurals) or
by a paraphrase that shares few or none of them.

Built for the board (descriptions are one line); nothing in the project is tuned to it beyond
what ``bench/planning.py`` reports.
"""

from __future__ import annotations

__all__ = ["KEYWORD_QUERIES", "PARAPHRASES", "TASKS", "UNRELATED"]

TASKS = [
    "Fix flaky database migration test on CI",
    "Implement OAuth login with Google accounts",
    "Write the onboarding guide for new contributors",
    "Add rate limiting to the public REST API",
    "Upgrade the Postgres cluster to version 16",
    "Design the settings page of the mobile app",
    "Rotate the TLS certificates before they expire",
    "Profile the search endpoint and cut its latency",
    "Translate the checkout flow into German and French",
    "Remove dead feature flags from the billing service",
    "Set up nightly backups of the object storage bucket",
    "Review the pull request that refactors the parser",
    "Draft the quarterly report for the leadership team",
    "Investigate memory leak in the image resizing worker",
    "Add dark mode to the dashboard",
    "Migrate the cron jobs to the new task scheduler",
    "Write unit tests for the invoice calculation",
    "Document the deployment runbook for on-call engineers",
    "Replace the hand-written CSV export with a library",
    "Benchmark the vector index at one million rows",
    "Fix the broken password reset email",
    "Add pagination to the audit log view",
    "Clean up unused Docker images on the build servers",
    "Plan the user interviews for the pricing redesign",
    "Make the notification service retry failed webhooks",
    "Encrypt customer files at rest",
    "Split the monolith's user module into its own service",
    "Update the privacy policy for the new analytics cookies",
    "Speed up the cold start of the command line tool",
    "Add keyboard shortcuts to the text editor",
    "Monitor disk usage on the logging hosts and alert early",
    "Archive closed support tickets older than a year",
    "Fix time zone bug in the meeting scheduler",
    "Create a demo dataset for the sales team",
    "Move secrets from environment files into the vault",
    "Write release notes for version 2.4",
    "Refactor the payment gateway client for testability",
    "Reduce the size of the frontend bundle",
    "Add search by tag to the knowledge base",
    "Decide on a caching strategy for product images",
]
"""Task descriptions; task ``n`` (1-based) is ``TASKS[n - 1]``."""

KEYWORD_QUERIES = [
    ("flaky migration tests", 1),
    ("oauth login", 2),
    ("find the task about the onboarding guide", 3),
    ("rate limits on the API", 4),
    ("postgres upgrade", 5),
    ("TLS certificates", 7),
    ("search latency", 8),
    ("feature flags billing", 10),
    ("backups of object storage", 11),
    ("memory leak image worker", 14),
    ("dark mode", 15),
    ("cron jobs scheduler", 16),
    ("invoice tests", 17),
    ("deployment runbook", 18),
    ("CSV exports", 19),
    ("password reset emails", 21),
    ("pagination audit log", 22),
    ("docker images", 23),
    ("webhooks retry", 25),
    ("privacy policy cookies", 28),
    ("keyboard shortcuts", 30),
    ("time zones scheduler bug", 33),
    ("release notes", 36),
    ("frontend bundle size", 38),
]
"""Queries that share words with their task (plurals, word order and filler words differ)."""

PARAPHRASES = [
    ("intermittently failing schema change check in continuous integration", 1),
    ("sign in through Google", 2),
    ("documentation to help newcomers get started", 3),
    ("throttle how many requests clients can make", 4),
    ("move the relational database to a newer major release", 5),
    ("renew expiring security certs", 7),
    ("make queries return faster", 8),
    ("localise the purchase pages", 9),
    ("protect stored client documents with encryption", 26),
    ("the photo thumbnail process keeps using more RAM", 14),
    ("night theme for the admin panel", 15),
    ("forgot-password message is not sent", 21),
    ("alert before the log machines run out of space", 31),
    ("get rid of old helpdesk requests", 32),
    ("store credentials in a secrets manager instead of .env", 35),
    ("the CLI takes too long to launch", 29),
    ("make the JavaScript download smaller", 38),
    ("how to deploy, for whoever is paged at night", 18),
    ("talk to customers about the new prices", 24),
    ("break the big application into smaller services", 27),
]
"""Queries that say what a task is about in other words."""

UNRELATED = [
    "kubernetes autoscaling",
    "buy coffee for the office",
    "quantum error correction",
    "hire a designer",
    "renew the domain name",
    "organise the team offsite",
]
"""Queries no task is about: every hit they get is a false one."""
