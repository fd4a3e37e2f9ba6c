"""What a James-like writer's log (james_consistency_kit.traffic) says it wrote, checked against the projection
tables: every complete write of the writer must still be there after a repair, or after an undo. The check lives in
the kit, which the impact bench shares (james-consistency bench impact)."""

from james_consistency_kit.traffic import KEY_COLUMNS, key_of, read_projections, undone_writes

__all__ = ["KEY_COLUMNS", "key_of", "read_projections", "undone_writes"]
