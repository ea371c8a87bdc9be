__kernel void k(__global int* in, __global int* out) {
    int i = (int)get_global_id(0);
    int acc = 0;
    for (int j = 0; j < (in[i] & 3); j++) { acc = 7; }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    out[i] = acc;
}
__kernel void ref(__global int* in, __global int* out) {
    int i = (int)get_global_id(0);
    out[i] = (in[i] & 3) > 0 ? 7 : 0;
}
