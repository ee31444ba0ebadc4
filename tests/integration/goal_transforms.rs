//! Every golden goal-transform case and human-study-chain stage must pass.

use std::path::Path;

use mbag::golden::goal_transforms::{GoldenError, verify_goal_transforms};

const GOLDEN: &str = "../shared/reference/golden/goals/goal_transforms.json.gz";

#[test]
fn every_golden_goal_transform_passes() {
    let outcomes = verify_goal_transforms(Path::new(GOLDEN)).expect("golden file readable");
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed())
        .map(ToString::to_string)
        .collect();
    let count = |prefix: &str| {
        outcomes
            .iter()
            .filter(|o| o.description.starts_with(prefix))
            .count()
    };
    // 7 sources, 7 x 4 facts, 224 cases, 2 chains of 6 stages.
    assert_eq!(count("source "), 7);
    assert_eq!(count("fact "), 28);
    assert_eq!(count("case "), 224);
    assert_eq!(count("chain "), 12);
    assert!(
        failed.is_empty(),
        "{} of {} failed:\n{}",
        failed.len(),
        outcomes.len(),
        failed.join("\n")
    );
}

#[test]
fn truncated_golden_file_is_a_clear_error() {
    let bytes = std::fs::read(GOLDEN).expect("golden file readable");
    let dir = std::env::temp_dir().join(format!("mbag-golden-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let truncated = dir.join("goal_transforms.json.gz");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let err = verify_goal_transforms(&truncated).unwrap_err();
    assert!(matches!(err, GoldenError::Decode { .. }), "{err}");
    assert!(err.to_string().contains("goal_transforms.json.gz"), "{err}");

    // Valid gzip JSON without the expected fields.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut encoder, br#"{"sources": {}, "facts": []}"#).unwrap();
    std::fs::write(&truncated, encoder.finish().unwrap()).unwrap();
    let err = verify_goal_transforms(&truncated).unwrap_err();
    assert!(err.to_string().contains("missing field \"cases\""), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_golden_file_names_it() {
    let err = verify_goal_transforms(Path::new("../shared/nope.json.gz")).unwrap_err();
    assert!(matches!(err, GoldenError::Io { .. }));
    assert!(err.to_string().contains("nope.json.gz"));
}
