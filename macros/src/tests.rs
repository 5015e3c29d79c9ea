//! Unit tests of the attribute (filled below).
