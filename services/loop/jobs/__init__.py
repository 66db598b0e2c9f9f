"""Background jobs (job_start) as a session feature: /jobs lists them."""
