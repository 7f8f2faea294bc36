//! End to end: a real server on a random port, a fresh real database, a fake agent that
//! verifies Standard Webhooks signatures, and requests signed as Slack signs them.

mod cli;
mod helpers;
mod processes;
mod protocol;
mod seed_cases;
