"""`DataProto` and its `concat` (verl/protocol.py v0.7.1:916-953, unchanged to main)."""

from verl.tensor import cat


def list_of_dict_to_dict_of_list(list_of_dict):
    """verl/utils/py_functional.py v0.7.1:359-368: keys come from the FIRST dict; a later dict with
    another key fails this assert, one that lacks a key leaves that key's list short."""
    if len(list_of_dict) == 0:
        return {}
    keys = list_of_dict[0].keys()
    output = {key: [] for key in keys}
    for data in list_of_dict:
        for key, item in data.items():
            assert key in output, f"Key '{key}' is not present in the keys of the first dictionary in the list."
            output[key].append(item)
    return output


class DataProto:
    def __init__(self, batch: dict, non_tensor_batch: dict, meta_info: dict):
        self.batch = batch
        self.non_tensor_batch = non_tensor_batch
        self.meta_info = meta_info
        self.check_consistency()

    def __len__(self):
        return len(next(iter(self.batch.values())))

    def check_consistency(self):
        """protocol.py check_consistency: every non-tensor column has one value per sample."""
        for key, value in self.non_tensor_batch.items():
            assert len(value) == len(self), f"non_tensor_batch[{key!r}] has {len(value)} values for {len(self)} samples"

    @staticmethod
    def concat(data: list) -> "DataProto":
        batch = {key: cat([d.batch[key] for d in data]) for key in data[0].batch}
        columns = list_of_dict_to_dict_of_list([d.non_tensor_batch for d in data])
        non_tensor_batch = {key: [v for part in parts for v in part] for key, parts in columns.items()}
        merged = {}
        metrics = []
        for d in data:
            for key, value in d.meta_info.items():
                if key == "metrics":
                    metrics.extend(value)
                elif key in merged:
                    # protocol.py v0.7.1:949-951
                    assert merged[key] == value, f"Conflicting values for meta_info key '{key}'"
                else:
                    merged[key] = value
        merged["metrics"] = metrics
        return DataProto(batch, non_tensor_batch, merged)
