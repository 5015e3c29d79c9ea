//! `#[redjit::reduce_copy]` (and the buffer traits: `safe_buffer_impl`) as a user
//! meets them, through rustc: the accepted forms
//! (`tests/ui/pass`, which also check the registered set at run time) and every
//! rejection, with the error rustc prints and where it points (`tests/ui/fail/*.stderr`,
//! read and reviewed like code; after an intended change regenerate them with
//! `TRYBUILD=overwrite cargo test --test macro_ui` and read the diff).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
