use super::*;
use crate::SpecError;
use crate::spec::KernelSpec;

const HEAD: &str = "[device]\nname = \"Test GPU\"\narch = \"sm_90\"\nsms = 100\nl2_mib = 40\n";

fn row(fields: &str) -> String {
    format!("{HEAD}\n[[norm]]\n{fields}\n")
}

const GOOD: &str = "op = \"rmsnorm\"\nresidual = false\ntypes = \"sixteen\"\ncols = \"4097..=8192\"\nstrategy = \"b256x8\"\nform = \"exact\"\nreason = \"fastest\"";

fn err_of(text: &str) -> (usize, String) {
    match parse_table("t.toml", text) {
        Err(SpecError::Table { file, line, rule }) => {
            assert_eq!(file, "t.toml");
            (line, rule)
        }
        other => panic!("expected a table error, got {other:?}"),
    }
}

#[test]
fn every_shipped_table_parses_and_resolves() {
    for name in device::shipped_names() {
        let t = Tuning::shipped(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(t.name(), name);
        assert!(!t.norm_rules().is_empty(), "{name}");
        for r in t.norm_rules() {
            assert!(!r.reason.contains("PENDING"), "{name}:{}", r.line);
        }
    }
    assert_eq!(Tuning::builtin().name(), "h100-sxm");
}

#[test]
fn a_good_row_parses_and_writes_back_the_same() {
    let t = parse_table("t.toml", &row(GOOD)).unwrap();
    assert_eq!(t.norm.len(), 1);
    let r = &t.norm[0];
    assert_eq!(r.line, 7);
    assert_eq!(r.strategy.to_string(), "b256x8 exact");
    assert_eq!(r.cols, 4097..=8192);
    let text = write_table(&t, &["header"]);
    let back = parse_table("t.toml", &text).unwrap();
    assert_eq!(back.norm.len(), 1);
    assert_eq!(back.device, t.device);
    let (a, b) = (&back.norm[0], &t.norm[0]);
    assert_eq!(
        (a.op, a.cols.clone(), a.strategy, &a.reason),
        (b.op, b.cols.clone(), b.strategy, &b.reason)
    );
    // The shipped tables read back through the writer unchanged too.
    for name in device::shipped_names() {
        let t = device::shipped_table(name).unwrap().unwrap();
        let back = parse_table(name, &write_table(&t, &[])).unwrap();
        let strip = |t: &TuningTable| {
            t.norm
                .iter()
                .map(|r| {
                    (
                        r.op,
                        r.algo,
                        r.residual,
                        r.types,
                        r.cols.clone(),
                        r.rows.clone(),
                        r.strategy,
                        r.reason.clone(),
                        r.result.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&back), strip(&t), "{name}");
    }
}

#[test]
fn bad_tables_name_the_file_the_line_and_the_rule() {
    // Truncated mid-row.
    let text = row(GOOD);
    let (line, rule) = err_of(&text[..text.len() - 20]);
    assert!(line >= 7, "{line}: {rule}");
    // An impossible strategy: a warp of 32 lanes x 4 packs holds 512 columns.
    let (line, rule) = err_of(&row(&GOOD
        .replace("b256x8", "w32x4")
        .replace("exact", "plain")));
    assert_eq!(line, 7);
    assert!(rule.contains("holds rows of at most 512"), "{rule}");
    // A form the layout has not.
    let (_, rule) = err_of(&row(&GOOD.replace("b256x8", "w32x8")));
    assert!(rule.contains("exact form needs"), "{rule}");
    // Packs a block cannot hold.
    let (_, rule) = err_of(&row(&GOOD.replace("b256x8", "b256x32")));
    assert!(rule.contains("packs"), "{rule}");
    // Unknown names list what is allowed.
    let (_, rule) = err_of(&row(&GOOD.replace("\"exact\"", "\"fast\"")));
    assert!(rule.contains("expected one of: plain, prefetch"), "{rule}");
    let (_, rule) = err_of(&row(&GOOD.replace("sixteen", "f64")));
    assert!(rule.contains("expected one of: f32, sixteen"), "{rule}");
    let (_, rule) = err_of(&row(&GOOD.replace("4097..=8192", "8192..=4097")));
    assert!(rule.contains("empty"), "{rule}");
    let (_, rule) = err_of(&row(&GOOD.replace("b256x8", "q256x8")));
    assert!(rule.contains("layout letter"), "{rule}");
    let (_, rule) = err_of(&row(&GOOD.replace("fastest", " ")));
    assert!(rule.contains("reason is empty"), "{rule}");
    let (_, rule) = err_of(&row(&format!("{GOOD}\nspeed = 3")));
    assert!(rule.contains("speed"), "{rule}");
    let (line, rule) = err_of(&HEAD.replace("sm_90", "sm_9000"));
    assert_eq!(line, 1, "{rule}");
    assert!(rule.contains("sm_9000"), "{rule}");
    // A base that is no shipped table.
    let t = parse_table("t.toml", &format!("base = \"b300\"\n{}", row(GOOD))).unwrap();
    let e = Tuning::resolve(t).unwrap_err().to_string();
    assert!(
        e.contains("\"b300\" is no shipped table") && e.contains("h100-sxm"),
        "{e}"
    );
}

#[test]
fn rows_of_a_row_range_take_only_calls_in_it() {
    let t = parse_table("t.toml", &row(&format!("{GOOD}\nrows = \"1..=64\""))).unwrap();
    let tuning = Tuning::resolve(t).unwrap();
    let spec: NormSpec = "norm_rmsnorm_bf16_bf16_w32x1".parse().unwrap();
    assert_eq!(
        spec.for_shape(Some(16), 8192, &tuning).name(),
        "norm_rmsnorm_bf16_bf16_b256x8_x"
    );
    assert_eq!(
        spec.for_shape(Some(16), 8000, &tuning).name(),
        "norm_rmsnorm_bf16_bf16_b256x8"
    );
    // Past the rows, or rows unknown: the ladder.
    let ladder = spec.for_shape(None, 8192, &Tuning::ladder()).name();
    assert_eq!(spec.for_shape(Some(65), 8192, &tuning).name(), ladder);
    assert_eq!(spec.for_shape(None, 8192, &tuning).name(), ladder);
}

#[test]
fn devices_take_their_own_table_else_the_nearest_of_their_arch() {
    let key = |name: &str, arch, sms, l2: u64| DeviceKey {
        name: name.into(),
        arch,
        sms,
        l2_bytes: l2 << 20,
    };
    let s = Tuning::for_device(&key("NVIDIA H200", Arch::SM90, 132, 60));
    assert_eq!(s.tuning.chain(), ["h200", "h100-sxm"]);
    assert!(s.why.contains("measured on this device"), "{}", s.why);
    let s = Tuning::for_device(&key("NVIDIA H100 80GB HBM3", Arch::SM90, 132, 50));
    assert_eq!(s.tuning.name(), "h100-sxm");
    // An H100 PCIe (114 SMs, 50 MiB): the nearest sm_90 table.
    let s = Tuning::for_device(&key("NVIDIA H100 PCIe", Arch::SM90, 114, 50));
    assert_eq!(s.tuning.name(), "h100-sxm");
    assert!(s.why.contains("nearest sm_90"), "{}", s.why);
    // An A100: no sm_80 table.
    let s = Tuning::for_device(&key("NVIDIA A100-SXM4-80GB", Arch::SM80, 108, 40));
    assert_eq!(s.tuning.name(), "ladder");
    assert_eq!(
        device_slug(&key("NVIDIA H100 80GB HBM3", Arch::SM90, 132, 50)),
        "nvidia-h100-80gb-hbm3-132sm"
    );
}
