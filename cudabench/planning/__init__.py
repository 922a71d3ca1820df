"""Planning: a request checked against the op and the catalog into a plan (no GPU touched),
and the timing policy its samples follow. Below the measuring code and the observers that
both read plans."""
