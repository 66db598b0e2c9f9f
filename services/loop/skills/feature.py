"""Skills as a session feature: the catalog in the system message, the skill tools and /skills."""

from __future__ import annotations

from services.loop.core.feature import Command, Emit, Feature, FeatureHost
from services.loop.core.ports import ToolDef
from services.loop.skills.session import SessionSkills


class SkillsFeature(Feature):
    """The session's skill directories; a changed catalog is a declared cache break."""

    name = "skills"

    def __init__(self, host: FeatureHost) -> None:
        super().__init__()
        self.host = host
        self.skills = SessionSkills(host.session.workspace, host.skill_dirs)
        host.set_instructions_base(self.skills.catalog)

    def tools(self) -> list[ToolDef]:
        return self.skills.tool_defs()

    async def step_part(self, emit: Emit) -> dict[str, str]:
        if self.skills.refresh(emit):  # the catalog is in the system message
            self.host.set_instructions_base(self.skills.catalog)
            if self.skills.catalog:  # `skill` is deferred: sent only once there is a skill to read
                self.host.tools.load(["skill"])
        return {}

    def commands(self) -> dict[str, Command]:
        async def skills(args: str) -> tuple[str, str]:
            return self.skills.command(args)

        return {"skills": skills}
