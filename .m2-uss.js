const fs=require("fs");
function uss(){const t=fs.readFileSync("/proc/self/smaps_rollup","utf8");const f=n=>Number(new RegExp("^"+n+":\\s+(\\d+)","m").exec(t)[1]);return (f("Private_Clean")+f("Private_Dirty"))/1024;}
global.gc(); const u0=uss(), h0=process.memoryUsage().heapUsed;
for (const w of process.argv.slice(2)) require(w);
global.gc(); global.gc();
setTimeout(()=>{global.gc(); console.log(process.argv.slice(2).join(","), "USS +", (uss()-u0).toFixed(1), "heap +", ((process.memoryUsage().heapUsed-h0)/1048576).toFixed(1));},200);
