"""The document model's hand-written constructors (docsan/model.py) behave as the dataclass's own would."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from docsan.model import BBox, Block, BlockKind, Cell, Source, Table


@pytest.mark.parametrize("cls", [BBox, Cell, Block])
def test_constructor_takes_every_field_in_order_with_its_default(cls: type) -> None:
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields]
    for p, f in zip(params, fields, strict=True):
        expected = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert p.default == expected, f.name


def test_blocks_built_by_hand_keep_the_dataclass_behaviour() -> None:
    table = Table(((Cell("a", colspan=2), Cell("", covered=True)),))
    block = Block("a", kind=BlockKind.TABLE, source=Source.OCR, bbox=BBox(1.0, 2.0, 3.0, 4.5), table=table, part=2)
    assert (block.text, block.kind, block.source, block.bbox, block.table, block.font_size, block.part) == (
        "a",
        BlockKind.TABLE,
        Source.OCR,
        BBox(1.0, 2.0, 3.0, 4.5),
        table,
        None,
        2,
    )
    assert block == Block("a", BlockKind.TABLE, Source.OCR, BBox(1.0, 2.0, 3.0, 4.5), table, None, 2)
    assert hash(block) == hash(Block("a", BlockKind.TABLE, Source.OCR, BBox(1.0, 2.0, 3.0, 4.5), table, None, 2))
    assert block != dataclasses.replace(block, part=None)
    assert pickle.loads(pickle.dumps(block)) == block
    assert dataclasses.replace(block.bbox, x1=9.0) == BBox(1.0, 2.0, 9.0, 4.5)
    assert (
        Cell("b") == Cell("b", 1, 1, False) and repr(Cell("b")) == "Cell(text='b', rowspan=1, colspan=1, covered=False)"
    )
    for obj, name in ((block, "text"), (block.bbox, "x0"), (Cell("b"), "covered")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, None)
    with pytest.raises(TypeError):
        Cell()  # type: ignore[call-arg]
