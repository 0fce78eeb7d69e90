"""pods paper-data (pods/commands/paper_data.py, scripts/paper_data.py): a clear error, exit 2."""

from pods.commands import paper_data


def test_script_reports_a_clear_error(tmp_path, capsys):
    assert paper_data.main(["--dest", str(tmp_path / "out"), "--from", str(tmp_path)]) == 2
    assert "no results folder with the authors' Instruct-*-Run*.json files" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
