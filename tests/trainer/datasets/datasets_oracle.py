"""The oracle of the dataset tests: the datasets library itself writes each offline layout from a
corpus the test makes, and says which rows each split holds.

  datasets_oracle.py layouts CORPUS.jsonl VALID.jsonl OUT
      CORPUS.jsonl and VALID.jsonl: one JSON object per line (the test's columns). Writes, under OUT:
        arrow/            the datasets Arrow cache ($HF_DATASETS_CACHE) holding org/name, config
                          "cfg": load_dataset("parquet", ...)'s cache laid out under that hub name,
                          then read back with load_dataset("org/name", "cfg") offline
        hub/              a hub cache ($HF_HUB_CACHE) holding dataset org/name at refs/main: parquet
                          files written by Dataset.to_parquet, mapped by a README configs block
        hub-folders/      the same without the configs block: cfg/train-00000-of-00001.parquet ...
        saved/            DatasetDict.save_to_disk; saved-one/ Dataset.save_to_disk (train only)
      and OUT/expected.json: {layout: {split: [the text column's rows as datasets reads them]}}.
"""
import json
import os
import shutil
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"

import datasets  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def text_column(dataset):
    return "text" if "text" in dataset.column_names else dataset.column_names[0]


def rows(dataset_dict):
    return {split: list(d[text_column(d)]) for split, d in dataset_dict.items()}


def arrow_cache(files, out):
    build_cache = os.path.join(out, "build-cache")
    built = datasets.load_dataset("parquet", data_files=files, cache_dir=build_cache)
    source = os.path.dirname(built["train"].cache_files[0]["filename"])
    target = os.path.join(out, "arrow", "org___name", "cfg", "0.0.0", os.path.basename(source))
    os.makedirs(target)
    for split in built:
        shutil.copy(os.path.join(source, f"parquet-{split}.arrow"), os.path.join(target, f"name-{split}.arrow"))
    with open(os.path.join(source, "dataset_info.json")) as f:
        info = json.load(f)
    info["config_name"] = "cfg"
    info["dataset_name"] = "name"
    for split in info["splits"].values():
        split["dataset_name"] = "name"
    with open(os.path.join(target, "dataset_info.json"), "w") as f:
        json.dump(info, f)
    shutil.rmtree(build_cache)
    return rows(datasets.load_dataset("org/name", "cfg", cache_dir=os.path.join(out, "arrow")))


def hub_cache(splits, out, with_card):
    repo = os.path.join(out, "hub" if with_card else "hub-folders", "datasets--org--name")
    snapshot = os.path.join(repo, "snapshots", COMMIT)
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(COMMIT)
    written = {}
    for split, dataset in splits.items():
        # Two shards for train, as the hub splits large ones.
        shards = 2 if split == "train" else 1
        for index in range(shards):
            folder = "data" if with_card else "cfg"
            name = f"{folder}/{split}-{index:05d}-of-{shards:05d}.parquet"
            os.makedirs(os.path.dirname(os.path.join(snapshot, name)), exist_ok=True)
            dataset.shard(shards, index, contiguous=True).to_parquet(os.path.join(snapshot, name))
            written.setdefault(split, []).append(os.path.join(snapshot, name))
    if with_card:
        with open(os.path.join(snapshot, "README.md"), "w") as f:
            f.write("---\nconfigs:\n- config_name: other\n  data_files: nothing/*.parquet\n"
                    "- config_name: cfg\n  data_files:\n  - split: train\n    path: data/train-*\n"
                    "  - split: validation\n    path: \"data/validation-*.parquet\"\n---\n# A dataset card\n")
    return rows(datasets.load_dataset("parquet", data_files=written))


def main():
    corpus, valid, out = sys.argv[2:5]
    splits = datasets.DatasetDict({
        "train": datasets.load_dataset("json", data_files=corpus, split="train"),
        "validation": datasets.load_dataset("json", data_files=valid, split="train"),
    })
    os.makedirs(out, exist_ok=True)
    parquet = {}
    for split, dataset in splits.items():
        parquet[split] = os.path.join(out, f"source-{split}.parquet")
        dataset.to_parquet(parquet[split])
    expected = {
        "arrow": arrow_cache(parquet, out),
        "hub": hub_cache(splits, out, with_card=True),
        "hub-folders": hub_cache(splits, out, with_card=False),
    }
    splits.save_to_disk(os.path.join(out, "saved"))
    expected["saved"] = rows(datasets.load_from_disk(os.path.join(out, "saved")))
    splits["train"].save_to_disk(os.path.join(out, "saved-one"))
    expected["saved-one"] = {"train": list(datasets.load_from_disk(os.path.join(out, "saved-one"))[text_column(splits["train"])])}
    for name in parquet.values():
        os.remove(name)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)


if __name__ == "__main__":
    main()
