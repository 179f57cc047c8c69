"""The facet registry (`teeny_ir.core.facets`): one decorator, one lookup contract,
one loading style for every kind of per-op knowledge, the compiler's own facets
and importer-style ones (string keys, versioned rules) alike."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dialects.graph.conv import Conv2dOp
from dialects.graph.elementwise import SiluOp
from teeny_ir.core.facets import Facet, FacetError, OptOut, modules_of

Rule = Callable[..., Any]


def _facet(homes: tuple[str, ...] = (), pointwise: bool = False) -> Facet[Rule]:
    return Facet("test", homes=lambda: homes, pointwise=pointwise)


def test_a_rule_an_opt_out_and_a_gap_are_the_three_answers() -> None:
    facet = _facet()

    @facet.register("Relu", "Relu6")
    def relu(node: object) -> str:
        return "relu"

    facet.opt_out("folded into the convolution", "BatchNormalization")
    assert facet.lookup("Relu") is relu and facet.lookup("Relu6") is relu
    assert facet.lookup("BatchNormalization") == OptOut("folded into the convolution")
    assert facet.lookup("Gemm") is None
    assert facet.covers("Relu") and facet.covers("BatchNormalization")
    assert not facet.covers("Gemm")
    assert facet.rules() == {"Relu": [relu], "Relu6": [relu]}
    assert facet.opt_outs() == {"BatchNormalization": "folded into the convolution"}


def test_versioned_rules_serve_from_their_version_until_a_newer_one() -> None:
    facet = _facet()

    @facet.register("Split", since=11)
    def split_11(node: object) -> str:
        return "attribute"

    @facet.register("Split", since=13)
    def split_13(node: object) -> str:
        return "input"

    @facet.register("Split", since=18)
    def split_18(node: object) -> str:
        return "num_outputs"

    assert facet.lookup("Split", version=11) is split_11
    assert facet.lookup("Split", version=12) is split_11
    assert facet.lookup("Split", version=13) is split_13
    assert facet.lookup("Split", version=17) is split_13
    assert facet.lookup("Split", version=21) is split_18
    assert facet.lookup("Split", version=10) is None
    assert facet.lookup("Split") is split_18  # no version: the newest
    assert facet.candidates("Split") == [split_11, split_13, split_18]
    with pytest.raises(FacetError, match=re.escape("'Split' has two test rules from version 13")):
        facet.register("Split", since=13)(split_13)


def test_conditional_rules_choose_by_the_subject_in_registration_order() -> None:
    facet = _facet()

    @facet.register(int, when=lambda n: n > 10)
    def big(n: int) -> str:
        return "big"

    @facet.register(int, when=lambda n: n > 0)
    def positive(n: int) -> str:
        return "positive"

    assert facet.lookup(int, subject=11) is big
    assert facet.lookup(int, subject=3) is positive
    assert facet.lookup(int, subject=-1) is None
    assert facet.candidates(int) == [big, positive]
    with pytest.raises(TypeError, match="conditional: lookup needs the subject"):
        facet.lookup(int)
    with pytest.raises(FacetError, match="'int' has two test rules"):
        facet.register(int)(big)


def test_contradicting_claims_are_errors_and_register_nothing() -> None:
    facet = _facet()

    def rule(node: object) -> None:
        return None

    facet.register("A")(rule)
    facet.opt_out("no kernel", "B")
    with pytest.raises(FacetError, match="'A' has two test rules"):
        facet.register("C", "A")(rule)
    with pytest.raises(FacetError, match="'B' already has a test opt-out"):
        facet.register("D", "B")(rule)
    with pytest.raises(FacetError, match="'A' has a test rule and an opt-out"):
        facet.opt_out("why", "E", "A")
    with pytest.raises(FacetError, match="'F' is named twice"):
        facet.register("F", "F")(rule)
    with pytest.raises(FacetError, match="needs a reason"):
        facet.opt_out("  ", "G")
    for key in "CDEFG":
        assert facet.lookup(key) is None, key


def test_the_pointwise_rule_serves_every_table_op_and_excludes_rules_of_their_own() -> None:
    facet = _facet(pointwise=True)

    @facet.pointwise
    def table(op: object) -> str:
        return "table"

    assert facet.lookup(SiluOp) is table and facet.covers(SiluOp)
    assert facet.lookup(Conv2dOp) is None
    with pytest.raises(FacetError, match=re.escape("'graph.silu' is in the pointwise table")):
        facet.register(SiluOp)(table)
    with pytest.raises(FacetError, match="two test rules claim the pointwise table"):
        facet.pointwise(table)
    with pytest.raises(FacetError, match="does not cover the pointwise table"):
        _facet().pointwise(table)


def test_rules_are_loaded_from_the_homes_once_on_first_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A facet imports nothing when it is made; its first lookup imports its
    homes, in order, once, and their decorators register the rules."""
    (tmp_path / "_teeny_facet_owner.py").write_text(
        "from teeny_ir.core.facets import Facet, modules_of\n"
        "ORDER = []\n"
        "FACET = Facet('test', homes=lambda: modules_of('_teeny_facet_home'))\n"
    )
    home = tmp_path / "_teeny_facet_home"
    home.mkdir()
    (home / "__init__.py").write_text("")
    for stem, key in (("first", "X"), ("second", "Y")):
        (home / f"{stem}.py").write_text(
            "from _teeny_facet_owner import FACET, ORDER\n"
            f"ORDER.append({stem!r})\n"
            f"FACET.register({key!r})(lambda: {stem!r})\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n.startswith("_teeny_facet")]:
        monkeypatch.delitem(sys.modules, name)
    owner = importlib.import_module("_teeny_facet_owner")
    try:
        assert owner.ORDER == []
        assert owner.FACET.lookup("X")() == "first"
        assert owner.FACET.lookup("Y")() == "second"
        assert owner.ORDER == ["first", "second"]
        assert owner.FACET.load() == ("_teeny_facet_home.first", "_teeny_facet_home.second")
        assert owner.ORDER == ["first", "second"]
    finally:
        for name in [n for n in sys.modules if n.startswith("_teeny_facet")]:
            del sys.modules[name]


def test_modules_of_lists_a_package_in_name_order_without_the_skipped() -> None:
    found = modules_of("teeny_ir.reference", skip={"semantics", "common", "__main__"})
    assert found == tuple(sorted(found)) and "teeny_ir.reference.conv" in found
    assert not {"teeny_ir.reference.semantics", "teeny_ir.reference.common"} & set(found)
