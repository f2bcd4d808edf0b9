"""The few torch operations verl's agent-loop worker applies to padded ids, on nested lists."""


class Tensor:
    """A 1-D or 2-D tensor of numbers: `dim`, `unsqueeze(0)`, `tolist`, `shape`, `cat` on dim 0."""

    def __init__(self, rows):
        self.rows = rows

    def dim(self) -> int:
        return 2 if self.rows and isinstance(self.rows[0], list) else 1

    def unsqueeze(self, axis: int) -> "Tensor":
        assert axis == 0
        return Tensor([self.rows])

    def tolist(self):
        return self.rows

    @property
    def shape(self):
        return (len(self.rows), len(self.rows[0])) if self.dim() == 2 else (len(self.rows),)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return self.rows[index]


def cat(tensors, dim: int = 0) -> Tensor:
    """torch.cat on dim 0: every element must be a tensor (None raises TypeError, as torch does)."""
    assert dim == 0
    rows = []
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"expected Tensor as element in argument 0, but got {type(tensor).__name__}")
        rows.extend(tensor.rows)
    return Tensor(rows)
