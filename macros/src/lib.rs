//! redjit-macros: the `#[reduce_copy]` attribute lands here (see the macro issue);
//! the crate builds empty so the workspace layout is fixed from the start.
