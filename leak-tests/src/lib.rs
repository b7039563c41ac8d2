//! Planted-leak variants of the reference store (filled in by the planted-catalog issue).
