"""reidrisk.linkage.generalization: released QI values read as the original values they cover."""

import numpy as np
import pandas as pd
import pytest

from reidrisk.linkage import add_noise, attack, evaluate, k_anonymize, reid_rate, shuffle_rows
from reidrisk.linkage.generalization import RecodeMap, parse_label, read_release
from reidrisk.linkage.release import LinkageError

QI = ["age", "region", "sex", "edu", "kids"]
SA = ["sa0", "sa1", "sa2"]
QI_ATTACKS = ["E1", "E2", "EUC1", "EUC2", "assign"]


@pytest.mark.parametrize("text, inside, outside", [
    ("30-39", [30, 39, 35.5], [29, 39.5, 40]),
    ("[30,40)", [30, 39.9], [29.9, 40]),
    ("(30, 40]", [30.1, 40], [30, 40.1]),
    ("[90,)", [90, 1e9], [89]),
    ("90+", [90, 120], [89.9]),
    (">=90", [90], [89]),
    (">90", [90.5], [90]),
    ("<20", [-5, 19.9], [20]),
    ("<=20", [20], [20.1]),
    ("-5-5", [-5, 0, 5], [-6, 6]),
    ("*", [1, 1e6], []),
])
def test_numeric_labels_cover_what_they_say(text, inside, outside):
    label = parse_label(text)
    values = np.array([str(v) for v in inside + outside], dtype=object)
    numbers = np.array(inside + outside, dtype=float)
    np.testing.assert_array_equal(label.covers(values, numbers),
                                  [True] * len(inside) + [False] * len(outside))


def test_sets_mix_values_and_ranges_and_plain_values_are_no_labels():
    label = parse_label("a|b|10-19")
    values = np.array(["a", "b", "c", "15", "25"], dtype=object)
    numbers = np.array([np.nan, np.nan, np.nan, 15, 25])
    np.testing.assert_array_equal(label.covers(values, numbers), [1, 1, 0, 1, 0])
    assert parse_label("2020-01") is None and parse_label("north") is None
    assert parse_label(30) is None


def test_overlapping_labels_and_suppression_match_every_covered_row():
    x = pd.DataFrame({"age": [31, 35, 38, 52, 57], "sex": ["f", "m", "f", "m", "f"]})
    # global labels, a finer overlapping one (local recoding) and suppressed cells
    y = pd.DataFrame({"age": ["30-39", "35-39", "*", "[50,60)", "99"],
                      "sex": ["f", "*", "m", "f|m", "f"]})
    match = read_release(x, y, ["age", "sex"])
    candidates = [set() for _ in range(len(y))]
    for rows, kx, ky in match.groups:
        for r, k in zip(rows, ky):
            candidates[r] = set(np.flatnonzero(kx == k).tolist())
    assert candidates == [{0, 2}, {1, 2}, {1, 3}, {3, 4}, set()]
    np.testing.assert_array_equal(match.unmatched, [0, 0, 0, 0, 1])
    assert match.mismatches(np.array([0, 4]), np.array([1, 4])).tolist() == [1, 1]
    note = match.note()
    assert "1 of 5 released rows (20.0%)" in note and "age: '99'" in note and "--recode" in note


def _table(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    p = 1 / np.arange(1, 13)
    x = pd.DataFrame({
        "age": rng.integers(18, 91, n),
        "region": rng.choice([f"r{i:02d}" for i in range(12)], n, p=p / p.sum()),
        "sex": rng.choice(["f", "m"], n),
        "edu": rng.choice(list("abcdefg"), n, p=[.3, .25, .2, .1, .08, .05, .02]),
        "kids": rng.poisson(1.2, n)})
    for c in SA:
        x[c] = np.round(rng.lognormal(8, 1, n), 2)
    return x


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A k = 5, 10% noise, shuffled release three ways: QIs prepared by hand (the original's values
    replaced by their labels), written with ranges [lo,hi) and sets, and coded (range -> its floor,
    set -> a code) with the recode map."""
    x = _table()
    rel = shuffle_rows(add_noise(k_anonymize(x, QI, 5), SA, 0.1, rng=2), rng=3)
    groups = [d for d in rel.details if d["step"] == "k_anonymize"][0]["generalized"]
    assert any("|" in lab for g in groups.values() for lab in g)          # sets and ranges
    assert any("|" not in lab for g in groups.values() for lab in g)
    hand, written, coded = x.copy(), rel.data.copy(), rel.data.copy()
    recode = []
    for c, labels in groups.items():
        own = {str(v): lab for lab, vals in labels.items() for v in vals}
        hand[c] = x[c].astype(str).map(lambda v: own.get(v, v))
        ranges = {lab: f"[{lab.split('-')[0]},{int(lab.split('-')[1]) + 1})" for lab in labels
                  if "|" not in lab}
        written[c] = rel.data[c].map(lambda v: ranges.get(str(v), v))
        codes = {lab: lab.split("-")[0] if lab in ranges else f"merged{i}"
                 for i, lab in enumerate(labels)}
        coded[c] = rel.data[c].map(lambda v: codes.get(str(v), v))
        recode += [(c, lab, code) for lab, code in codes.items()]
    path = tmp_path_factory.mktemp("recode") / "recode.csv"
    pd.DataFrame(recode, columns=["column", "value", "code"]).to_csv(path, index=False)
    return x, rel, hand, written, coded, RecodeMap.from_file(path)


@pytest.mark.parametrize("name", QI_ATTACKS)
def test_ranges_sets_and_recoded_codes_link_as_the_release_prepared_by_hand(published, name):
    x, rel, hand, written, coded, recode = published
    by_hand = attack(name, hand, rel.data, qi=QI, sa=SA, rng=0, read_labels=False)
    as_written = attack(name, x, written, qi=QI, sa=SA, rng=0)
    through_map = attack(name, recode.apply(x, QI), coded, qi=QI, sa=SA, rng=0)
    np.testing.assert_array_equal(as_written.guess, by_hand.guess)
    np.testing.assert_array_equal(through_map.guess, by_hand.guess)
    if name in ("EUC1", "assign"):
        assert reid_rate(by_hand, rel).rate > 0.5
    # without the map, no coded QI vector matches: EUC1 gives up on every row
    if name == "EUC1":
        assert attack(name, x, coded, qi=QI, sa=SA, rng=0).gave_up == rel.n


def test_evaluate_notes_the_unmatched_share_and_the_map_removes_it(published):
    x, rel, _, _, coded, recode = published
    plain = evaluate(x, coded, qi=QI, sa=SA, truth=rel.truth, attacks=["EUC1"], rng=0)
    assert any("match no original row" in n and "--recode" in n for n in plain.notes)
    mapped = evaluate(x, coded, qi=QI, sa=SA, truth=rel.truth, attacks=["EUC1"], rng=0,
                      recode=recode)
    assert not any("match no original row" in n for n in mapped.notes)
    assert plain.rates[0].rate == 0.0 and mapped.rates[0].rate > 0.5


def test_recode_map_from_toml_and_its_errors(tmp_path):
    x = pd.DataFrame({"age": [31, 45, 90], "limit": [1000.0, 25000.0, 9e4], "city": ["a", "b", "c"]})
    (tmp_path / "map.toml").write_text('[age]\n"[30,40)" = 30\n"40-49" = 40\n\n'
                                       '[limit]\n"<20000" = 0\n">=20000" = 1\n\n[city]\nb = "a"\n')
    got = RecodeMap.from_file(tmp_path / "map.toml").apply(x, ["age", "limit", "city"])
    assert got["age"].tolist() == ["30", "40", "90"]
    assert got["limit"].tolist() == ["0", "1", "1"] and got["city"].tolist() == ["a", "a", "c"]
    (tmp_path / "clash.toml").write_text('[age]\n"30-39" = 30\n"[30,50)" = 40\n')
    with pytest.raises(LinkageError, match="clash.toml.*'age'.*'31'.*both"):
        RecodeMap.from_file(tmp_path / "clash.toml").apply(x, ["age"])
    with pytest.raises(LinkageError, match="not QI columns"):
        RecodeMap.from_file(tmp_path / "map.toml").apply(x, ["age"])
    (tmp_path / "bad.csv").write_text("col,from,to\nage,30,3\n")
    with pytest.raises(LinkageError, match="column,value,code"):
        RecodeMap.from_file(tmp_path / "bad.csv")
