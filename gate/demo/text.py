"""The demo world's vocabulary: sentence templates for a fictional API product's docs.

Everything the generator in :mod:`gate.demo.world` writes comes from here:
the product's resources (with their singular, plural and topic words), the
plans and the attributes of its limits and pricing tables, error conditions,
how-to tasks, SDK languages, and the templates of prose sentences, page
titles, golden queries and FAQ questions.

Two properties of the wording matter to the demo's story and are deliberate:

* Table rows name an attribute with its canonical label ("webhooks per
  project", "api rate limit"), and entity-attribute queries use those labels;
  the prose next to a table describes the same limits with other inflections
  ("each project's webhook", "limited", "capped"). Under the old ingestion
  parser the table is gone and only that prose is left, so a query finds it
  only through a loose (morphology-tolerant) match.
* Resources come in families whose names share stems ("message",
  "message template", "message batch", "messaging channel"), and error codes
  in families that share most characters (``ERR_WEBHOOK_SIGNATURE``,
  ``ERR_WEBHOOK_SIGNING_KEY``; ``E4127``, ``E4172``). Navigational and
  error-string queries name one member literally; a matcher that blurs
  surface forms confuses it with its siblings.
"""

from __future__ import annotations

PRODUCT = "Quillstack"

# (slug, singular, plural, family, topic words). Topic words recur in the
# resource's pages and give the corpus its topical structure.
RESOURCES: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    ("webhooks", "webhook", "webhooks", "webhook",
     ("delivery", "payload", "callback", "listener", "receiver", "subscription")),
    ("webhook-endpoints", "webhook endpoint", "webhook endpoints", "webhook",
     ("url", "listener", "callback", "tls", "handshake", "receiver")),
    ("webhook-deliveries", "webhook delivery", "webhook deliveries", "webhook",
     ("attempt", "backoff", "retry", "payload", "status", "redelivery")),
    ("signing-secrets", "signing secret", "signing secrets", "webhook",
     ("signature", "hmac", "header", "timestamp", "digest", "verification")),
    ("messages", "message", "messages", "message",
     ("recipient", "sender", "body", "thread", "attachment", "inbox")),
    ("message-templates", "message template", "message templates", "message",
     ("placeholder", "variable", "locale", "preview", "layout", "render")),
    ("message-batches", "message batch", "message batches", "message",
     ("recipient", "chunking", "throughput", "bulk", "fanout", "dispatch")),
    ("messaging-channels", "messaging channel", "messaging channels", "message",
     ("sms", "push", "carrier", "fallback", "provider", "routing")),
    ("events", "event", "events", "event",
     ("emit", "subscriber", "topic", "ordering", "replay", "cursor")),
    ("event-streams", "event stream", "event streams", "event",
     ("partition", "offset", "consumer", "cursor", "lag", "checkpoint")),
    ("event-types", "event type", "event types", "event",
     ("schema", "version", "catalog", "namespace", "filter", "registry")),
    ("exports", "export", "exports", "export",
     ("csv", "parquet", "archive", "download", "destination", "manifest")),
    ("export-schedules", "export schedule", "export schedules", "export",
     ("cron", "interval", "timezone", "window", "recurrence", "trigger")),
    ("imports", "import", "imports", "import",
     ("mapping", "row", "column", "upload", "validation", "dedupe")),
    ("files", "file", "files", "file",
     ("upload", "storage", "mime", "checksum", "download", "multipart")),
    ("file-uploads", "file upload", "file uploads", "file",
     ("multipart", "part", "resumable", "checksum", "presigned", "chunk")),
    ("projects", "project", "projects", "project",
     ("owner", "member", "settings", "scope", "archive", "transfer")),
    ("project-members", "project member", "project members", "project",
     ("invite", "owner", "permission", "seat", "removal", "access")),
    ("api-keys", "api key", "api keys", "key",
     ("rotate", "scope", "prefix", "revoke", "expiry", "restricted")),
    ("access-tokens", "access token", "access tokens", "key",
     ("oauth", "refresh", "expiry", "bearer", "grant", "introspection")),
    ("users", "user", "users", "user",
     ("email", "profile", "invite", "login", "password", "locale")),
    ("user-sessions", "user session", "user sessions", "user",
     ("cookie", "idle", "device", "logout", "timeout", "revocation")),
    ("teams", "team", "teams", "team",
     ("member", "owner", "seat", "directory", "sync", "group")),
    ("roles", "role", "roles", "team",
     ("permission", "grant", "policy", "scope", "assignment", "custom")),
    ("audit-logs", "audit log", "audit logs", "audit",
     ("actor", "trail", "retention", "siem", "export", "tamper")),
    ("queues", "queue", "queues", "queue",
     ("consumer", "worker", "backlog", "visibility", "dead-letter", "ack")),
    ("schedules", "schedule", "schedules", "job",
     ("cron", "trigger", "timezone", "misfire", "pause", "interval")),
    ("jobs", "job", "jobs", "job",
     ("worker", "status", "cancel", "progress", "result", "timeout")),
    ("invoices", "invoice", "invoices", "billing",
     ("billing", "payment", "charge", "tax", "currency", "line-item")),
    ("subscriptions", "subscription", "subscriptions", "billing",
     ("renewal", "trial", "proration", "cancel", "seat", "upgrade")),
    ("domains", "domain", "domains", "domain",
     ("dns", "verify", "record", "cname", "certificate", "txt")),
    ("regions", "region", "regions", "domain",
     ("residency", "latency", "failover", "replica", "locality", "compliance")),
    ("workspaces", "workspace", "workspaces", "project",
     ("tenant", "isolation", "switcher", "billing", "owner", "sso")),
    ("buckets", "bucket", "buckets", "file",
     ("object", "storage", "lifecycle", "versioning", "encryption", "policy")),
    ("pipelines", "pipeline", "pipelines", "pipeline",
     ("stage", "transform", "source", "sink", "backfill", "dag")),
    ("pipeline-runs", "pipeline run", "pipeline runs", "pipeline",
     ("stage", "duration", "log", "rerun", "artifact", "trigger")),
    ("reports", "report", "reports", "report",
     ("dashboard", "metric", "chart", "filter", "breakdown", "snapshot")),
    ("notifications", "notification", "notifications", "notify",
     ("preference", "digest", "mute", "badge", "inbox", "delivery")),
    ("deployments", "deployment", "deployments", "deploy",
     ("release", "rollback", "canary", "artifact", "promotion", "health")),
    ("environments", "environment", "environments", "deploy",
     ("staging", "production", "variable", "promotion", "sandbox", "isolation")),
    ("secrets", "secret", "secrets", "deploy",
     ("vault", "encrypt", "rotation", "kms", "reference", "injection")),
    ("contacts", "contact", "contacts", "contact",
     ("segment", "attribute", "consent", "merge", "unsubscribe", "list")),
    ("contact-lists", "contact list", "contact lists", "contact",
     ("segment", "membership", "import", "suppression", "sync", "size")),
    ("campaigns", "campaign", "campaigns", "contact",
     ("audience", "send", "schedule", "ab-test", "open-rate", "throttle")),
    ("datasets", "dataset", "datasets", "pipeline",
     ("schema", "partition", "row", "column", "snapshot", "lineage")),
    ("alerts", "alert", "alerts", "report",
     ("threshold", "condition", "pager", "escalation", "silence", "incident")),
    ("integrations", "integration", "integrations", "integrate",
     ("connector", "oauth", "sync", "marketplace", "install", "scope")),
    ("search-indexes", "search index", "search indexes", "search",
     ("shard", "analyzer", "reindex", "mapping", "facet", "synonym")),
)

PLANS = ("free", "starter", "team", "scale", "enterprise")

# Limit table rows: (canonical label, unit, value ladder per plan, loose description).
# ``{s}``/``{p}``/``{S}``/``{P}`` are the resource's singular/plural (capitalised).
# The loose description is what the prose next to the table says about the same
# limit: it shares stems with the label and with the queries ("project" /
# "projects", "limit" / "limited", "monthly" / "month") but no content word in
# the same form, so only a morphology-tolerant match connects them.
LIMIT_ATTRIBUTES: tuple[tuple[str, str, tuple[int, ...], str], ...] = (
    ("{p} per project", "", (5, 20, 100, 500, 2000),
     "Projects hold a capped count of {s} objects, varying across plans"),
    ("{p} per workspace", "", (10, 50, 250, 1000, 5000),
     "Workspaces hold a capped count of {s} objects, varying across plans"),
    ("api rate limit", "requests per minute", (60, 300, 1200, 6000, 20000),
     "Calls into {s} endpoints are limited by rates counted each minute, higher on larger plans"),
    ("max {s} size", "MB", (1, 5, 25, 100, 500),
     "Oversized {p} are refused above a maximum that grows with plans"),
    ("{s} retention", "days", (7, 30, 90, 365, 730),
     "{P} are retained for a number of days that lengthens with plans, then purged"),
    ("concurrent {p}", "", (1, 5, 20, 50, 200),
     "{S} operations run concurrently only up to a number that rises with plans"),
    ("{p} per request", "", (10, 50, 100, 500, 1000),
     "Batched requests carry a bounded number of {s} items, set by plans"),
    ("monthly {s} quota", "", (1000, 25000, 250000, 2000000, 10000000),
     "{S} usage is metered each month against quotas that differ between plans"),
    ("{s} name length", "characters", (64, 64, 128, 256, 256),
     "{S} names are restricted in how long they are, longer on bigger plans"),
    ("hourly request limit", "requests per hour", (1000, 10000, 50000, 200000, 1000000),
     "Requests touching {p} are limited per hour, by plans"),
)

# Pricing table rows: (canonical label, unit, ladder, loose description), as above.
PRICING_ATTRIBUTES: tuple[tuple[str, str, tuple[float, ...], str], ...] = (
    ("price per 1000 {p}", "USD", (0.0, 0.5, 0.4, 0.3, 0.2),
     "{S} usage is priced in blocks of a thousand, cheaper on larger plans"),
    ("included {p} per month", "", (1000, 10000, 100000, 1000000, 5000000),
     "Plans include a monthly allowance of {s} usage at no charge"),
    ("overage per {s}", "USD", (0.0, 0.001, 0.0008, 0.0006, 0.0004),
     "Usage beyond the bundled {p} allowance incurs overages, lower on larger plans"),
    ("monthly base fee", "USD", (0, 29, 199, 899, 3000),
     "Plans carry flat fees each month before any {s} usage"),
)

PRICED_FAMILIES = ("message", "event", "export", "file", "pipeline", "contact", "search", "job", "notify")

# Error conditions of named error codes: (suffix, description, cause, fix).
ERROR_CONDITIONS: tuple[tuple[str, str, str, str], ...] = (
    ("SIGNATURE", "the signature of the {s} payload does not match",
     "the signing secret was rotated or the raw body was modified before verification",
     "verify against the raw request body with the current signing secret"),
    ("SIGNING_KEY", "the signing key referenced by the {s} is unknown",
     "the key was deleted or belongs to another environment", "re-create the key and update the {s} reference"),
    ("TIMEOUT", "the {s} operation did not finish in time",
     "the upstream receiver was slow or the payload was very large", "retry with backoff or split the work"),
    ("TIMED_OUT_WAITING", "the {s} waited too long for a lock",
     "another operation held the {s} for longer than the wait budget", "retry later or reduce contention"),
    ("NOT_FOUND", "the {s} does not exist or is not visible to the caller",
     "the identifier is wrong or the key lacks access to the project", "check the identifier and the key's project"),
    ("NOT_FOUND_IN_REGION", "the {s} exists in another region",
     "the request was sent to the wrong regional host", "send the request to the {s}'s home region"),
    ("TOO_LARGE", "the {s} body is bigger than the account allows",
     "an attachment pushed the body over the allowance", "compress the content or move to a bigger tier"),
    ("TOO_MANY", "no more {p} can be added to this account",
     "the ceiling for this account was reached", "delete unused {p} or ask support for more"),
    ("QUOTA_EXCEEDED", "the {s} allowance of this billing cycle is used up",
     "usage went beyond what the tier includes", "wait for the next cycle or change tier"),
    ("QUOTA_EXHAUSTED_TRIAL", "the trial allowance for {p} is exhausted",
     "the trial has a fixed allowance", "add a payment method to continue"),
    ("INVALID_STATE", "the {s} is in a state that does not allow the operation",
     "the {s} was archived, paused or is still being provisioned", "wait until the {s} is active"),
    ("INVALID_STATUS_TRANSITION", "the requested status change is not allowed for the {s}",
     "the workflow does not permit moving between those statuses", "follow the documented lifecycle"),
    ("CONFLICT", "another change to the {s} happened first",
     "two writers updated the {s} concurrently", "re-read the {s} and retry with the new version"),
    ("DISABLED", "the {s} feature is disabled for this project",
     "an administrator switched it off or the plan lacks it", "enable it in the project settings"),
    ("EXPIRED", "the {s} has expired", "its lifetime ended before it was used", "create a new {s}"),
    ("MALFORMED", "the {s} could not be parsed", "a field has the wrong type or the JSON is invalid",
     "validate the body against the schema"),
    ("MALFORMED_HEADER", "a header required by the {s} is malformed",
     "the header value has the wrong encoding", "send the header exactly as documented"),
)

HTTP_ERRORS: tuple[tuple[int, str, str], ...] = (
    (400, "Bad Request", "the request body or query string is invalid"),
    (401, "Unauthorized", "the api key or access token is missing or invalid"),
    (403, "Forbidden", "the credentials are valid but lack permission"),
    (404, "Not Found", "the resource does not exist or is not visible"),
    (409, "Conflict", "the request conflicts with the current state"),
    (413, "Payload Too Large", "the body exceeds the maximum size"),
    (422, "Unprocessable Entity", "the body is well formed but semantically invalid"),
    (429, "Too Many Requests", "the rate limit for the key or project was exceeded"),
    (500, "Internal Server Error", "an unexpected failure happened on our side"),
    (502, "Bad Gateway", "an upstream service returned an invalid response"),
    (503, "Service Unavailable", "the service is temporarily overloaded or in maintenance"),
    (504, "Gateway Timeout", "an upstream service did not answer in time"),
)

# Numeric error code families: the first two digits name an area.
NUMERIC_FAMILIES = (41, 42, 43, 44, 45, 51, 52, 53)
NUMERIC_MEANINGS = (
    "validation of the {s} failed", "the {s} reference points to a deleted object",
    "the {s} limit for the key was reached", "the {s} belongs to a different workspace",
    "the {s} payload encoding is not supported", "the {s} could not be stored",
    "the {s} dependency is unavailable", "the {s} was rejected by a policy",
)

SDK_LANGS = (
    ("python", "Python"), ("node", "Node.js"), ("go", "Go"), ("ruby", "Ruby"),
    ("java", "Java"), ("php", "PHP"), ("dotnet", ".NET"), ("rust", "Rust"),
)

# How-to tasks: (slug, title, what the guide's introduction says it is for, query phrasings).
# ``{s}``/``{p}``/``{a}`` as above. Queries reuse the title's or the introduction's
# words in the same forms: a how-to query is matched as well by any of the models.
HOWTO_TASKS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("create", "Create {a} {s}", "set up a new {s} from code or from the console",
     ("how do i create {a} {s}", "set up a new {s} from code")),
    ("delete-in-bulk", "Delete {p} in bulk", "remove many {p} in one go",
     ("how to delete {p} in bulk", "remove many {p} at once")),
    ("paginate", "Paginate through {p}", "page through every {s} with cursors",
     ("how do i paginate through {p}", "page through every {s} using cursors")),
    ("filter-by-date", "Filter {p} by date", "list only the {p} created in a date range",
     ("how to filter {p} by date", "list {p} created in a date range")),
    ("retry-failures", "Retry failed {p}", "run a failed {s} again without duplicates",
     ("how do i retry failed {p}", "run a failed {s} again")),
    ("monitor-usage", "Monitor {s} usage", "track how many {p} you consume over time",
     ("how can i monitor {s} usage", "track how many {p} we consume")),
    ("set-up-alerts", "Set up alerts for {p}", "get alerted when {p} fail or stall",
     ("set up alerts for {p} that fail", "get alerted when {p} stall")),
    ("test-locally", "Test {p} locally", "exercise {s} handling on localhost before shipping",
     ("how do i test {p} locally", "test {s} handling on localhost")),
    ("rotate-credentials", "Rotate credentials used by {p}", "replace the secret a {s} uses without downtime",
     ("how to rotate credentials used by {p}", "replace the secret a {s} uses")),
    ("export-to-csv", "Export {p} to CSV", "download {p} as a spreadsheet",
     ("how do i export {p} to csv", "download {p} as a spreadsheet file")),
    ("restrict-access", "Restrict access to {p}", "limit who can read or change {p}",
     ("how can i restrict access to {p}", "limit who can change {p}")),
    ("use-idempotency", "Make {s} requests idempotent", "avoid duplicate {p} when a request is retried",
     ("how to make {s} requests idempotent", "avoid duplicate {p} when retrying")),
    ("handle-errors", "Handle {s} errors", "react to each error a {s} call can return",
     ("how should i handle {s} errors", "react to errors from {s} calls")),
    ("tag-and-label", "Tag and label {p}", "organise {p} with labels",
     ("how do i tag and label {p}", "organise {p} with labels and tags")),
    ("archive-old", "Archive old {p}", "clean up {p} nobody uses any more",
     ("how to archive old {p}", "clean up {p} nobody uses")),
    ("move-between-projects", "Move {p} between projects", "transfer {a} {s} to another project",
     ("how can i move {p} between projects", "transfer {a} {s} to another project")),
    ("debug-latency", "Debug slow {s} calls", "find out why {s} requests are slow",
     ("how to debug slow {s} calls", "find out why {s} requests are slow today")),
    ("configure-retention", "Configure {s} retention", "keep {p} for longer or shorter",
     ("how do i configure {s} retention", "keep {p} for longer")),
    ("subscribe-to-changes", "Subscribe to {s} changes", "get notified when {a} {s} is updated",
     ("how to subscribe to {s} changes", "get notified when {a} {s} is updated")),
    ("version-pinning", "Pin the {s} API version", "lock the api version your {s} calls use",
     ("how to pin the {s} api version", "lock the api version of {s} calls")),
)

STEP_TEMPLATES = (
    "Open the {product} console, select the project and go to the {P} section.",
    "Call the {p} endpoint with your api key in the Authorization header.",
    "Set the {t} option on the {s} before you save it.",
    "Use the {lang} client: the method on the {p} resource accepts the {t} parameter.",
    "Check the response status; a 2xx code means the {s} was accepted.",
    "Repeat the call with the cursor from the previous page until no cursor is returned.",
    "Store the returned identifier so you can refer to the {s} later.",
    "Confirm the change in the activity view, where each {s} shows its {t} and status.",
    "If the call fails, read the error code in the body and follow the linked troubleshooting page.",
    "From the cli, run the {p} subcommand with the --{t} flag.",
)

PROSE_TEMPLATES = (
    "A {s} in {product} is a resource you manage through the api, the console or one of the client libraries.",
    "Every {s} carries a {t} and a {t2}, and both appear in the {s} object returned by the api.",
    "{P} are scoped to a project; a key from one project cannot read {p} of another.",
    "The {t} of a {s} can be changed at any time, while its identifier never changes.",
    "Most teams create {p} from their backend and inspect them in the console when something looks wrong.",
    "Changes to {p} are recorded in the audit trail with the actor, the time and the {t}.",
    "When a {s} is archived it stops counting towards usage but keeps its history.",
    "The {t} setting controls how the {s} behaves when the {t2} is missing.",
    "{P} support pagination with cursors; a page holds up to one hundred {p}.",
    "Requests that touch {p} are authenticated with an api key or an access token.",
    "Use sandbox projects to experiment with {p} without affecting production traffic.",
    "The {s} object exposes its {t}, {t2} and the time it was last updated.",
    "Webhook notifications can tell your service when a {s} changes its {t}.",
    "Each {s} belongs to exactly one project and one region.",
    "Client libraries wrap the {p} endpoints and retry safe calls automatically.",
    "You can attach metadata to a {s} to keep your own identifiers next to its {t}.",
)

CHANGELOG_TEMPLATES = (
    "Added a {t} field to the {s} object.",
    "Fixed an issue where listing {p} skipped items when the {t} changed during pagination.",
    "The {p} endpoints now accept a {t} filter.",
    "Improved latency of {s} creation in all regions.",
    "Deprecated the legacy {t} parameter on {p}; it will be removed in v3.",
    "The console shows the {t2} of each {s}.",
    "{P} can now be exported together with their {t}.",
    "Raised the default page size when listing {p}.",
)

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")

# Tail queries: odd phrasings, very specific questions, each with the sentence
# (added to one chunk of a page about the resource) that answers it. ``{x}`` is a topic word.
TAIL_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("can {p} carry a {x} bigger than usual in the {lang} client",
     "The {lang} client lets {p} carry a bigger {x} than usual once its body limit is raised."),
    ("{s} {x} behaves differently in staging than prod any idea",
     "In staging the {s} {x} is relaxed, so it behaves differently than in prod."),
    ("is there a way to keep the {x} of {a} {s} when cloning a project",
     "Cloning a project copies each {s} but resets its {x}; export the {x} first to keep it."),
    ("does the {lang} sdk expose the {x} of {p} or only via raw http",
     "The {lang} sdk does expose the {x} of {p} as a typed property; raw http is not needed."),
    ("weird {x} value on some {p} after the migration",
     "After the migration some {p} show a placeholder {x} value until they are saved again."),
    ("{x} missing on {p} created through the cli",
     "{P} created through the cli leave the {x} empty unless the --{x} flag is passed."),
)

FAQ_FILLER_QUESTIONS = (
    "where can i find my api key",
    "which regions does {product} run in",
    "is there a free plan",
    "how do i contact support",
    "can i change my billing email",
    "do you offer an sla on the enterprise plan",
    "how do i delete my account",
    "is there a status page",
    "which client libraries are official",
    "can i invite people outside my company",
    "how long is the trial",
    "do you support single sign on",
    "what happens to my data when i downgrade",
    "can i get an invoice in another currency",
    "where do i report a security issue",
    "how are seats counted",
    "can i use {product} from a browser",
    "is there a sandbox environment",
    "how do i enable two factor authentication",
    "what time zone are schedules in",
    "how do i transfer ownership of a workspace",
    "can i recover a deleted project",
    "do api keys expire",
    "what does a request id look like",
    "how do i pin an api version",
    "are webhooks delivered in order",
    "can i self host {product}",
    "which tls versions are accepted",
    "how do i close a team",
    "is there a student discount",
    "does {product} support ipv6",
)
