//! The simulator over real HTTP on 127.0.0.1, driven with reqwest as a client would.

mod support;

mod errors;
mod faults;
mod list;
mod loading;
mod refresh;
mod swagger;
mod sync;
mod versions;
