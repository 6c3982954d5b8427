; Inno Setup 6 script for Prefill: a per-user install (no admin rights), a Start menu entry and an
; uninstaller that asks before deleting the user's models and chats.
;
; Built by `make -C packaging windows` (Git Bash), or directly:
;   iscc /DAppVersion=0.1.0 /DVariant=cpu-portable /DSourceDir=..\..\dist\cpu-portable\prefill ^
;        /DOutputDir=..\..\dist\cpu-portable /DRootDir=..\.. packaging\windows\prefill.iss

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
#ifndef Variant
  #define Variant "cpu-portable"
#endif
#ifndef RootDir
  #define RootDir "..\.."
#endif
#ifndef SourceDir
  #define SourceDir RootDir + "\dist\" + Variant + "\prefill"
#endif
#ifndef OutputDir
  #define OutputDir RootDir + "\dist\" + Variant
#endif
#if Variant == "cuda"
  #define Flavour "-cuda"
#else
  #define Flavour ""
#endif

[Setup]
; One AppId for every variant: installing the CUDA build replaces the CPU build and vice versa.
AppId={{FFBF688D-C7CE-47C4-8BFE-9D319C35AC1C}
AppName=Prefill
AppVersion={#AppVersion}
AppVerName=Prefill {#AppVersion}
AppPublisher=Prefill developers
; Per user, no UAC prompt: {autopf} is %LOCALAPPDATA%\Programs when running without admin rights.
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
DefaultDirName={autopf}\Prefill
DefaultGroupName=Prefill
DisableProgramGroupPage=yes
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir={#OutputDir}
OutputBaseFilename=prefill-{#AppVersion}-windows-x64{#Flavour}-setup
SetupIconFile={#RootDir}\resources\icons\prefill.ico
UninstallDisplayIcon={app}\prefill.exe
UninstallDisplayName=Prefill
Compression=lzma2
SolidCompression=yes
WizardStyle=modern
; The app must not be running while its files are replaced.
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "{#SourceDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Prefill"; Filename: "{app}\prefill.exe"; Comment: "Chat with local language models"
Name: "{autodesktop}\Prefill"; Filename: "{app}\prefill.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\prefill.exe"; Description: "{cm:LaunchProgram,Prefill}"; Flags: nowait postinstall skipifsilent

[UninstallDelete]
; Files the app may leave beside itself (none expected: it writes only to %LOCALAPPDATA%\prefill).
Type: filesandordirs; Name: "{app}\__pycache__"

[Code]
{ The models, chats and settings live in platformdirs' folder, %LOCALAPPDATA%\prefill. They stay
  unless the user says otherwise; a silent uninstall never deletes them. }
procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
var
  DataDir: String;
begin
  if CurUninstallStep <> usPostUninstall then
    Exit;
  DataDir := ExpandConstant('{localappdata}\prefill');
  if UninstallSilent or not DirExists(DataDir) then
    Exit;
  if MsgBox('Also delete your downloaded models, chats and settings?' + #13#10#13#10 + DataDir,
            mbConfirmation, MB_YESNO or MB_DEFBUTTON2) = IDYES then
    DelTree(DataDir, True, True, True);
end;
