use super::*;
use crate::SpecError;
use crate::spec::KernelSpec;
use crate::spec::reduce::ReduceSpec;

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
    // A form the layout has not: a loop row takes any length.
    let (_, rule) = err_of(&row(&GOOD.replace("b256x8", "l256x8")));
    assert!(rule.contains("exact form needs"), "{rule}");
    // A warp of short rows has it.
    let warp = GOOD
        .replace("b256x8", "w8x4")
        .replace("4097..=8192", "65..=128");
    assert!(parse_table("t.toml", &row(&warp)).is_ok());
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
fn a_reduce_copy_row_sets_the_launch_and_is_checked() {
    let text = format!("{HEAD}\n[[reduce_copy]]\nthreads = 128\nreason = \"fastest\"\n");
    let t = parse_table("t.toml", &text).unwrap();
    assert_eq!(
        t.reduce_copy.as_ref().map(|r| (r.threads, r.line)),
        Some((128, 7))
    );
    let back = parse_table("t.toml", &write_table(&t, &[])).unwrap();
    assert_eq!(
        back.reduce_copy.map(|r| (r.threads, r.reason)),
        Some((128, "fastest".to_string()))
    );
    // The shipped tables' rows, and a table without one takes its base's.
    let threads = |t: &Tuning| t.reduce_copy_rule().map(|r| r.threads);
    assert_eq!(threads(&Tuning::shipped("h200").unwrap()), Some(128));
    assert_eq!(threads(&Tuning::shipped("h100-sxm").unwrap()), Some(512));
    let t = parse_table("t.toml", &format!("base = \"h100-sxm\"\n{}", row(GOOD))).unwrap();
    assert_eq!(threads(&Tuning::resolve(t).unwrap()), Some(512));
    assert_eq!(threads(&Tuning::ladder()), None);
    // A bad value is refused at the row's line, naming itself and the rule.
    let refused = |table: &str, value: &str, rule_part: &str| {
        let (line, rule) = err_of(table);
        assert_eq!(line, 7, "{rule}");
        assert!(rule.contains(value) && rule.contains(rule_part), "{rule}");
    };
    for bad in [0, 100, 2048] {
        let value = format!("threads = {bad}");
        refused(
            &text.replace("threads = 128", &value),
            &value,
            "a multiple of 32 threads from 32 to 1024",
        );
    }
    let (line, rule) = err_of(&format!(
        "{text}\n[[reduce_copy]]\nthreads = 256\nreason = \"again\"\n"
    ));
    assert_eq!(line, 11, "{rule}");
    assert!(
        rule.contains("one reduce_copy row") && rule.contains("line 7"),
        "{rule}"
    );
    let (_, rule) = err_of(&text.replace("fastest", " "));
    assert!(rule.contains("reason is empty"), "{rule}");
    // Blocks an SM for the write-heavy kernels of an unroll: read, written
    // back, checked; only those kernels are held.
    let held = text.replace(
        "threads = 128",
        "threads = 128\nwrite_heavy_blocks_per_sm = { u8 = 6, u4 = 9 }",
    );
    let t = parse_table("t.toml", &held).unwrap();
    let blocks = |t: &TuningTable| {
        t.reduce_copy
            .as_ref()
            .unwrap()
            .write_heavy_blocks_per_sm
            .clone()
    };
    assert_eq!(blocks(&t), [(4, 9), (8, 6)]);
    assert_eq!(
        blocks(&parse_table("t.toml", &write_table(&t, &[])).unwrap()),
        [(4, 9), (8, 6)]
    );
    assert_eq!(blocks(&parse_table("t.toml", &text).unwrap()), []);
    let rule = t.reduce_copy.as_ref().unwrap();
    let held_at = |name: &str| rule.held_blocks(&name.parse().unwrap());
    assert_eq!(held_at("reduce_copy_u4_f32_bf16_T_A_sum_rn"), Some(9));
    assert_eq!(held_at("reduce_copy_u8_f32_f16_T_T_sum_rn"), Some(6));
    assert_eq!(held_at("reduce_copy_u2_f32_bf16_T_A_sum_rn"), None);
    assert_eq!(held_at("reduce_copy_u4_f32_bf16_TA_T_sum_rn"), None);
    for (bad, says) in [
        ("u4 = 4", "u4 = 4: blocks an SM from 5 to 32"),
        ("u4 = 33", "u4 = 33: blocks an SM from 5 to 32"),
        (
            "u3 = 9",
            "key \"u3\": keys are u<unroll>, the unroll one of [1, 2, 4, 8]",
        ),
        ("four = 9", "key \"four\""),
    ] {
        refused(
            &held.replace("u4 = 9", bad),
            "write_heavy_blocks_per_sm",
            says,
        );
    }
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
fn a_row_asks_for_pairs_where_its_kernels_can_take_them() {
    let paired = row(&format!("{GOOD}\npairs = true"));
    let table = parse_table("t.toml", &paired).unwrap();
    // Written back, the row says so.
    assert!(write_table(&table, &[]).contains("\npairs = true\n"));
    let tuning = Tuning::resolve(table).unwrap();
    let spec: NormSpec = "norm_rmsnorm_bf16_bf16_w32x1".parse().unwrap();
    let laid = spec.for_shape(Some(16), 8192, &tuning);
    assert_eq!(laid.name(), "norm_rmsnorm_bf16_bf16_b256x8_x_v");
    // An FP8 output reads its input type's rows in packs.
    let fp8 = spec.to_e4m3(crate::spec::norm::Fp8Scale::PerRow);
    assert!(!fp8.for_shape(Some(16), 8192, &tuning).pairs);
    // Pairs where the row fills an exact form whose ragged form cannot pair
    // (it spills at every bound): the other rows in packs.
    let long = GOOD
        .replace(
            "\"rmsnorm\"\nresidual = false",
            "\"layernorm\"\nresidual = true",
        )
        .replace("4097..=8192", "16385..=32768")
        .replace("b256x8", "b512x16");
    let t = parse_table("t.toml", &row(&format!("{long}\npairs = true"))).unwrap();
    let tuning = Tuning::resolve(t).unwrap();
    let res: NormSpec = "norm_layernorm_res_bf16_bf16_w32x1".parse().unwrap();
    assert_eq!(
        res.for_shape(Some(16), 32768, &tuning).name(),
        "norm_layernorm_res_bf16_bf16_b512x16_x_v"
    );
    assert_eq!(
        res.for_shape(Some(16), 32000, &tuning).name(),
        "norm_layernorm_res_bf16_bf16_b512x16"
    );
    // f32 rows and prefetching forms cannot: refused where the table is read.
    let f32_rows = GOOD.replace("sixteen", "f32");
    let (line, rule) = err_of(&row(&format!("{f32_rows}\npairs = true")));
    assert_eq!(line, 7);
    assert!(rule.contains("takes its packs in pairs"), "{rule}");
    let staged = GOOD
        .replace("b256x8", "s512x8")
        .replace("exact", "prefetch");
    let (_, rule) = err_of(&row(&format!("{staged}\npairs = true")));
    assert!(rule.contains("takes its packs in pairs"), "{rule}");
}

#[test]
fn a_row_asks_for_raw_rows_where_its_kernels_can_hold_them() {
    let online = GOOD
        .replace("op = \"rmsnorm\"", "op = \"softmax\"\nalgo = \"online\"")
        .replace("4097..=8192", "16385..=32768")
        .replace("b256x8", "b512x16")
        .replace("exact", "plain");
    let raw = row(&format!("{online}\nraw = true\nbound = 2"));
    let table = parse_table("t.toml", &raw).unwrap();
    // Written back, the row says so.
    assert!(write_table(&table, &[]).contains("\nraw = true\n"));
    let tuning = Tuning::resolve(table).unwrap();
    let spec: NormSpec = "norm_softmax_online_bf16_bf16_w32x1".parse().unwrap();
    assert_eq!(
        spec.for_shape(Some(8192), 32768, &tuning).name(),
        "norm_softmax_online_bf16_bf16_b512x16_o2_r"
    );
    // f32 rows keep their widened kernel (the row's types are 16-bit only).
    let f32_spec: NormSpec = "norm_softmax_online_f32_f32_w32x1".parse().unwrap();
    assert!(!f32_spec.for_shape(Some(8192), 32768, &tuning).raw);
    // A warp kernel, or a block that holds its columns, cannot: refused
    // where the table is read.
    let warp = online
        .replace("b512x16", "w32x4")
        .replace("16385..=32768", "257..=512");
    let (line, rule) = err_of(&row(&format!("{warp}\nraw = true")));
    assert_eq!(line, 7);
    assert!(rule.contains("holds its row as raw words"), "{rule}");
    let (_, rule) = err_of(&row(&format!("{online}\nheld = 16\nraw = true")));
    assert!(rule.contains("holds its row as raw words"), "{rule}");
}

#[test]
fn a_row_may_give_its_kernel_a_launch_bound() {
    let bounded = row(&format!("{GOOD}\nbound = 2"));
    let table = parse_table("t.toml", &bounded).unwrap();
    assert_eq!(table.norm[0].strategy.bound, Some(2));
    assert!(write_table(&table, &[]).contains("\nbound = 2\n"));
    let tuning = Tuning::resolve(table).unwrap();
    let spec: NormSpec = "norm_rmsnorm_bf16_bf16_w32x1".parse().unwrap();
    let laid = spec.for_shape(Some(16), 8192, &tuning);
    assert_eq!(laid.name(), "norm_rmsnorm_bf16_bf16_b256x8_o2_x");
    assert_eq!(laid.min_blocks(), 2);
    assert_eq!(NormStrategy::of(&laid).bound, Some(2));
    // The bound is that kernel's: its twins take their own.
    assert_eq!(laid.ragged_twin().bound, None);
    assert_eq!(laid.general_twin().bound, None);
    // Nor does an FP8 output laid out by the 16-bit row take it.
    let fp8 = spec.to_e4m3(crate::spec::norm::Fp8Scale::PerRow);
    assert_eq!(fp8.for_shape(Some(16), 8192, &tuning).bound, None);
    // A bound no block of the layout can take is refused where it is read.
    let (line, rule) = err_of(&row(&format!("{GOOD}\nbound = 0")));
    assert_eq!(line, 7);
    assert!(rule.contains("launch bound"), "{rule}");
    let (_, rule) = err_of(&row(&format!("{GOOD}\nbound = 9")));
    assert!(rule.contains("launch bound"), "{rule}");
}

#[test]
fn fp8_outputs_take_rows_of_their_own_types_else_their_inputs() {
    let fp8 = |name: &str| {
        let s: NormSpec = name.parse().unwrap();
        s.to_e4m3(crate::spec::norm::Fp8Scale::PerRow)
    };
    let spec = fp8("norm_rmsnorm_bf16_bf16_w32x1");
    // A table of 16-bit rows only: the FP8 output reads them (and its block
    // takes its exact form, held columns dropped).
    let sixteen = GOOD.replace("form = \"exact\"", "form = \"plain\"\nheld = 8");
    let t = Tuning::resolve(parse_table("t.toml", &row(&sixteen)).unwrap()).unwrap();
    assert_eq!(
        spec.for_shape(Some(16), 8192, &t).name(),
        "norm_rmsnorm_bf16_e4m3_b256x8_x_qd"
    );
    // A row of its own types: taken as it is, plain form included; the
    // 16-bit call keeps its row.
    let own = GOOD
        .replace("sixteen", "sixteen-e4m3")
        .replace("b256x8", "b512x4")
        .replace("exact", "plain");
    let both = format!("{}\n[[norm]]\n{own}\n", row(&sixteen));
    let table = parse_table("t.toml", &both).unwrap();
    assert!(write_table(&table, &[]).contains("types = \"sixteen-e4m3\""));
    let t = Tuning::resolve(table).unwrap();
    assert_eq!(
        spec.for_shape(Some(16), 8192, &t).name(),
        "norm_rmsnorm_bf16_e4m3_b512x4_qd"
    );
    let bf16: NormSpec = "norm_rmsnorm_bf16_bf16_w32x1".parse().unwrap();
    assert_eq!(
        bf16.for_shape(Some(16), 8192, &t).name(),
        "norm_rmsnorm_bf16_bf16_b256x8_h8"
    );
    // f32 in, e4m3 out is a group of its own.
    let f32_in = fp8("norm_rmsnorm_f32_f32_w32x1");
    assert_eq!(
        f32_in.for_shape(Some(16), 8192, &t).name(),
        f32_in.for_shape(Some(16), 8192, &Tuning::ladder()).name()
    );
    // Held columns and softmax rows of an FP8 group are refused where the
    // table is read.
    let (line, rule) = err_of(&row(&format!("{own}\nheld = 4")));
    assert_eq!(line, 7);
    assert!(rule.contains("holds no columns"), "{rule}");
    let soft = own.replace("\"rmsnorm\"", "\"softmax\"");
    let (_, rule) = err_of(&row(&soft));
    assert!(rule.contains("e4m3") || rule.contains("fp8"), "{rule}");
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

fn reduce_row(fields: &str) -> String {
    format!("{HEAD}\n[[reduce]]\n{fields}\n")
}

const REDUCE_GOOD: &str = "axis = \"rows\"\nops = [\"sum\"]\ninput = \"bf16\"\ncols = \"2049..=4096\"\nrows = \"2049..\"\nstrategy = \"t128u8\"\nreason = \"fastest\"";

#[test]
fn reduce_rows_parse_write_back_and_serve_their_calls() {
    use crate::spec::reduce::{ReduceStrategy, Shape};
    let t = parse_table("t.toml", &reduce_row(REDUCE_GOOD)).unwrap();
    assert_eq!(t.reduce.len(), 1);
    let r = &t.reduce[0];
    assert_eq!((r.line, r.size.clone()), (7, 2049..=4096));
    assert_eq!(
        r.strategy,
        ReduceStrategy {
            threads: 128,
            unroll: 8
        }
    );
    let back = parse_table("t.toml", &write_table(&t, &[])).unwrap();
    assert_eq!(back.reduce[0].strategy, r.strategy);
    assert_eq!(
        (back.reduce[0].size.clone(), back.reduce[0].rows.clone()),
        (r.size.clone(), r.rows.clone())
    );
    let tuning = Tuning::resolve(t).unwrap();
    let sum: ReduceSpec = "reduce_rows_sum_bf16_f32".parse().unwrap();
    let m = |rows, cols| Shape::Matrix {
        rows,
        cols,
        ld: cols,
    };
    assert!(tuning.reduce_rule(&sum, m(32768, 4096)).is_some());
    // Another row length, row count, op, input or axis: no row.
    assert!(tuning.reduce_rule(&sum, m(32768, 8192)).is_none());
    assert!(tuning.reduce_rule(&sum, m(64, 4096)).is_none());
    let max: ReduceSpec = "reduce_rows_max_bf16_f32".parse().unwrap();
    assert!(tuning.reduce_rule(&max, m(32768, 4096)).is_none());
    let f32_sum: ReduceSpec = "reduce_rows_sum_f32_f32".parse().unwrap();
    assert!(tuning.reduce_rule(&f32_sum, m(32768, 4096)).is_none());
    let cols: ReduceSpec = "reduce_cols_sum_bf16_f32".parse().unwrap();
    assert!(tuning.reduce_rule(&cols, m(32768, 4096)).is_none());
    // The shipped H200 table lays out its tuned calls.
    let h200 = Tuning::shipped("h200").unwrap();
    assert!(!h200.reduce_rules().is_empty());
    assert!(h200.reduce_rule(&sum, m(32768, 4096)).is_some());
}

#[test]
fn bad_reduce_rows_name_the_line_and_the_rule() {
    let (line, rule) = err_of(&reduce_row(&REDUCE_GOOD.replace("t128u8", "t100u8")));
    assert_eq!(line, 7);
    assert!(rule.contains("power of two from 64 to 1024"), "{rule}");
    let (_, rule) = err_of(&reduce_row(&REDUCE_GOOD.replace("t128u8", "t128u64")));
    assert!(rule.contains("1 to 32 loads"), "{rule}");
    let (_, rule) = err_of(&reduce_row(&REDUCE_GOOD.replace("t128u8", "fast")));
    assert!(rule.contains("t<threads>u<unroll>"), "{rule}");
    // A column kernel keeps at most 8 rows in flight.
    let cols = REDUCE_GOOD
        .replace("\"rows\"", "\"cols\"")
        .replace("t128u8", "t256u16");
    let (_, rule) = err_of(&reduce_row(&cols));
    assert!(rule.contains("1 to 8 rows"), "{rule}");
    // A full-array row names n, not cols or rows.
    let all = REDUCE_GOOD.replace("\"rows\"", "\"all\"");
    let (_, rule) = err_of(&reduce_row(&all));
    assert!(rule.contains("as n"), "{rule}");
    let (_, rule) = err_of(&reduce_row(&REDUCE_GOOD.replace("cols =", "n =")));
    assert!(rule.contains("as cols"), "{rule}");
    let (_, rule) = err_of(&reduce_row(&REDUCE_GOOD.replace("\"sum\"", "\"mode\"")));
    assert!(rule.contains("mode"), "{rule}");
    let (_, rule) = err_of(&reduce_row(&REDUCE_GOOD.replace("bf16", "f64")));
    assert!(rule.contains("f64"), "{rule}");
    let (_, rule) = err_of(&reduce_row(&REDUCE_GOOD.replace("fastest", "")));
    assert!(rule.contains("reason is empty"), "{rule}");
}

const AR_GOOD: &str = "world = 4\nll_max = \"32K\"\npush_max = \"256K\"\ncp_async_min = \"4M\"\nnarrow_max = \"16M\"\nnccl_min = \"256M\"\nreason = \"measured\"";

fn ar_row(fields: &str) -> String {
    format!("{HEAD}\n[[all_reduce]]\n{fields}\n")
}

#[test]
fn all_reduce_rows_parse_write_back_and_name_bad_values() {
    let t = parse_table("t.toml", &ar_row(AR_GOOD)).unwrap();
    let r = &t.all_reduce[0];
    assert_eq!(
        (r.world, r.ll_max, r.push_max),
        (4, Some(32 << 10), Some(256 << 10))
    );
    assert_eq!((r.one_shot_max, r.nccl_min), (None, Some(256 << 20)));
    let back = parse_table("t.toml", &write_table(&t, &[])).unwrap();
    assert_eq!(back.all_reduce[0].sizes(), r.sizes());
    let any = parse_table(
        "t.toml",
        &ar_row(&format!("{AR_GOOD}\none_shot_max = \"any\"")),
    )
    .unwrap();
    assert_eq!(any.all_reduce[0].one_shot_max, Some(u64::MAX));
    assert!(write_table(&any, &[]).contains("one_shot_max = \"any\""));
    let tuning = Tuning::resolve(t).unwrap();
    assert!(tuning.all_reduce_rule(4).is_some() && tuning.all_reduce_rule(2).is_none());
    // The shipped H200 table has its measured worlds.
    let h200 = Tuning::shipped("h200").unwrap();
    assert!(h200.all_reduce_rule(2).is_some() && h200.all_reduce_rule(4).is_some());
    let (line, rule) = err_of(&ar_row(&AR_GOOD.replace("world = 4", "world = 9")));
    assert_eq!(line, 7);
    assert!(rule.contains("2 to 8 ranks"), "{rule}");
    let (_, rule) = err_of(&ar_row(&AR_GOOD.replace("\"32K\"", "\"32Q\"")));
    assert!(rule.contains("ll_max = \"32Q\""), "{rule}");
    let (_, rule) = err_of(&ar_row(&AR_GOOD.replace("\"32K\"", "\"1M\"")));
    assert!(rule.contains("past push_max"), "{rule}");
    let (_, rule) = err_of(&ar_row(&AR_GOOD.replace("\"16M\"", "\"1M\"")));
    assert!(rule.contains("below cp_async_min"), "{rule}");
    let (_, rule) = err_of(&ar_row(&AR_GOOD.replace("cp_async_min = \"4M\"\n", "")));
    assert!(rule.contains("narrow_max without cp_async_min"), "{rule}");
    let (_, rule) = err_of(&format!("{}\n[[all_reduce]]\n{AR_GOOD}\n", ar_row(AR_GOOD)));
    assert!(
        rule.contains("world 4 has a row already, at line 7"),
        "{rule}"
    );
    let (_, rule) = err_of(&ar_row(&AR_GOOD.replace("measured", "")));
    assert!(rule.contains("reason is empty"), "{rule}");
}
